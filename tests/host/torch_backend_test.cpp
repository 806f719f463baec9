// The table of LibTorch backends (host/probe/torch_backend.hpp): what a device is to the host
// comes from the torch device it runs on, whatever its plugin's kind or class.
#include "probe/torch_backend.hpp"

#include <gtest/gtest.h>

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
  EXPECT_EQ(cuda.needs, TorchBackend::Needs::kCuda);
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
  EXPECT_EQ(mps.needs, TorchBackend::Needs::kMacos);
  EXPECT_EQ(mps.memory_cap, TorchBackend::MemoryCap::kWatermark);
  EXPECT_EQ(mps.distributed, nullptr);
}

TEST(TorchBackend, ARecordWithoutATorchDeviceIsTakenByItsKindAndAnUnknownBackendByNothing) {
  EXPECT_STREQ(torch_backend(device("cuda", "", MLH_DEVICE_CLASS_DISCRETE_GPU)).type, "cuda");
  const TorchBackend& xpu = torch_backend(device("xpu", "xpu:0", MLH_DEVICE_CLASS_DISCRETE_GPU));
  EXPECT_STREQ(xpu.type, "");
  EXPECT_EQ(xpu.needs, TorchBackend::Needs::kNone);
  EXPECT_EQ(xpu.memory_cap, TorchBackend::MemoryCap::kNone);
  EXPECT_FALSE(xpu.cudnn);
  EXPECT_EQ(xpu.distributed, nullptr);
  ASSERT_NE(find_torch_backend("mps"), nullptr);
  EXPECT_TRUE(find_torch_backend("mps")->accelerator);
  EXPECT_EQ(find_torch_backend("fakegpu"), nullptr);
}

}  // namespace
}  // namespace mlhost
