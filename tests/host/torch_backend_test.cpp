// The table of LibTorch backends (host/probe/torch_backend.hpp): what a device is to the host
// comes from the torch device it runs on, whatever its plugin's kind or class.
#include "probe/torch_backend.hpp"

#include <gtest/gtest.h>

#include "plugins/manifest.hpp"
#include "probe/backends.hpp"
#include "test_devices.hpp"

namespace mlhost {
namespace {

Device device(const std::string& kind, const std::string& torch_device, int32_t device_class) {
  Device d;
  d.plugin = d.kind = kind;
  d.torch_device = torch_device;
  d.device_class = device_class;
  return d;
}

TEST(TorchBackend, TheTorchDeviceDecidesNotTheKindOrClass) {
  const TorchBackend& cuda = torch_backend(device("cuda", "cuda:1", MLH_DEVICE_CLASS_DISCRETE_GPU));
  EXPECT_STREQ(cuda.type, "cuda");
  EXPECT_TRUE(cuda.accelerator);
  EXPECT_EQ(cuda.memory_cap, TorchBackend::MemoryCap::kCachingAllocator);
  EXPECT_STREQ(cuda.distributed, "nccl");

  // A third-party device that runs on LibTorch's cpu is the CPU to the host, GPU class or not.
  const TorchBackend& cpuset = torch_backend(device("cpuset", "cpu", MLH_DEVICE_CLASS_CPU));
  const TorchBackend& fake_gpu = torch_backend(device("fakegpu", "cpu", MLH_DEVICE_CLASS_DISCRETE_GPU));
  EXPECT_EQ(&cpuset, &fake_gpu);
  EXPECT_STREQ(fake_gpu.type, "cpu");
  EXPECT_FALSE(fake_gpu.accelerator);
  EXPECT_EQ(fake_gpu.memory_cap, TorchBackend::MemoryCap::kTensorMemory);
  EXPECT_STREQ(fake_gpu.distributed, "gloo");

  const TorchBackend& mps = torch_backend(device("mps", "mps", MLH_DEVICE_CLASS_UNIFIED_GPU));
  EXPECT_EQ(mps.memory_cap, TorchBackend::MemoryCap::kWatermark);
  EXPECT_EQ(mps.distributed, nullptr);
}

TEST(TorchBackend, ARecordWithoutATorchDeviceIsTakenByItsKindAndAnUnknownBackendByNothing) {
  EXPECT_STREQ(torch_backend(device("cuda", "", MLH_DEVICE_CLASS_DISCRETE_GPU)).type, "cuda");
  const TorchBackend& xpu = torch_backend(device("xpu", "xpu:0", MLH_DEVICE_CLASS_DISCRETE_GPU));
  EXPECT_STREQ(xpu.type, "");
  EXPECT_EQ(xpu.memory_cap, TorchBackend::MemoryCap::kNone);
  EXPECT_FALSE(xpu.cudnn);
  EXPECT_EQ(xpu.distributed, nullptr);
  ASSERT_NE(find_torch_backend("mps"), nullptr);
  EXPECT_TRUE(find_torch_backend("mps")->accelerator);
  EXPECT_EQ(find_torch_backend("fakegpu"), nullptr);
}

PluginManifest algorithm(const std::string& name, std::vector<std::string> backends) {
  PluginManifest m;
  m.kind = "algorithm";
  m.name = name;
  m.torch_version = "2.15.0";
  m.torch_backends = std::move(backends);
  return m;
}

// A device is usable only where some algorithm plugin's LibTorch runs its backend, as the
// manifests say (build.torch.backends); a backend the trait table does not know is tried.
TEST(TorchBackend, ADeviceNeedsAnAlgorithmWhoseLibTorchRunsItsBackend) {
  auto probe = [](const std::vector<PluginManifest>& algorithms) {
    Device cpu = testing::epyc_cpu(), gpu = testing::cuda_gpu("A100", 40ll << 30, 8, 0),
           mac = testing::apple_mps(16ll << 30), xpu = device("xpu", "xpu:0", MLH_DEVICE_CLASS_DISCRETE_GPU);
    cpu.available = mac.available = xpu.available = true;
    std::vector<PluginProbe> probes(1);
    probes[0].devices = {cpu, gpu, mac, xpu};
    require_torch_backends(probes, algorithms);
    return probes[0].devices;
  };
  const std::vector<Device> cpu_only = probe({algorithm("protonet", {"cpu"}), algorithm("ppo", {"cpu"})});
  EXPECT_TRUE(cpu_only[0].available);
  EXPECT_FALSE(cpu_only[1].available);
  EXPECT_EQ(cpu_only[1].unavailable_reason,
            "no algorithm plugin has a LibTorch with CUDA (protonet (LibTorch 2.15.0 for cpu), ppo (LibTorch 2.15.0 for cpu))");
  EXPECT_FALSE(cpu_only[2].available);
  EXPECT_EQ(cpu_only[2].unavailable_reason.rfind("no algorithm plugin has a LibTorch with MPS", 0), 0u)
      << cpu_only[2].unavailable_reason;
  EXPECT_TRUE(cpu_only[3].available) << "xpu is not in the table: its worker says whether LibTorch has it";

  const std::vector<Device> one_has_cuda = probe({algorithm("protonet", {"cpu"}), algorithm("trm", {"cpu", "cuda"})});
  EXPECT_TRUE(one_has_cuda[1].available) << one_has_cuda[1].unavailable_reason;
  EXPECT_FALSE(one_has_cuda[2].available);
  EXPECT_TRUE(probe({algorithm("trm", {"cpu", "mps"})})[2].available);
  EXPECT_TRUE(probe({})[1].available) << "with no algorithm plugins nothing is judged";
  PluginManifest no_torch = algorithm("plain-c", {});
  no_torch.torch_version.reset();
  const std::vector<Device> without_libtorch = probe({no_torch});
  EXPECT_TRUE(without_libtorch[0].available) << "an algorithm without LibTorch runs on the CPU";
  EXPECT_FALSE(without_libtorch[1].available);
  EXPECT_NE(without_libtorch[1].unavailable_reason.find("plain-c (no LibTorch)"), std::string::npos)
      << without_libtorch[1].unavailable_reason;
}

}  // namespace
}  // namespace mlhost
