// The runtime's device policy comes from the trait table (mlh/device_traits.hpp), and only
// sdk/runtime/src/backends/ names a backend: timing waits for any accelerator, including one
// the runtime has no file for; autocast follows the traits; and no other runtime source tests
// a device's type.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <mlh/device_traits.hpp>
#include <mlh/plugin.hpp>
#include <mlh/runtime/benchmark.hpp>
#include <mlh/runtime/compat.hpp>
#include <mlh/runtime/precision.hpp>

#include "mlh_test_paths.hpp"

namespace {

namespace fs = std::filesystem;

// What happened, in order: a benchmark's body ran, or the device was waited for.
std::vector<std::string>& events() {
  static std::vector<std::string> all;
  return all;
}

#if MLH_TORCH_VERSION_AT_LEAST(2, 5)
// An accelerator LibTorch knows and the runtime does not (as xpu, or MPS, whose queued work
// is waited for through the same device guard): PrivateUse1, whose guard records each wait.
struct RecordingGuard : c10::impl::NoOpDeviceGuardImpl<c10::DeviceType::PrivateUse1> {
  void synchronizeDevice(c10::DeviceIndex index) const override {
    events().push_back("wait for device " + std::to_string(index));
  }
};
C10_REGISTER_GUARD_IMPL(PrivateUse1, RecordingGuard);

TEST(DeviceBackend, ABenchmarkWaitsForAnAcceleratorsQueuedWorkAfterEveryIteration) {
  const at::Device device(c10::DeviceType::PrivateUse1, 1);
  ASSERT_TRUE(mlh::device_traits(device.str()).accelerator) << "a backend the table does not know is an accelerator";
  events().clear();
  mlh::rt::BenchmarkOptions options;
  options.device = device;
  options.warmup_iterations = 2;
  options.min_iterations = options.max_iterations = 3;
  options.min_seconds = 0;
  const mlh::rt::BenchmarkResult result = mlh::rt::run_benchmark("launch", [] { events().push_back("body"); }, options);
  EXPECT_EQ(result.iterations, 3);
  std::vector<std::string> expected;
  for (int i = 0; i < 2 + 3; ++i) expected.insert(expected.end(), {"body", "wait for device 1"});
  EXPECT_EQ(events(), expected) << "each iteration's time must include its kernels, not only their launch";
}
#else
TEST(DeviceBackend, ABenchmarkWaitsForAnAcceleratorsQueuedWorkAfterEveryIteration) {
  GTEST_SKIP() << "LibTorch " << TORCH_VERSION << " has no device-generic wait (DeviceGuardImplInterface::synchronizeDevice, "
               << "2.5 and later) to test through; this build runs on the CPU alone";
}
#endif

TEST(DeviceBackend, TheCpuIsNeverWaitedFor) {
  events().clear();
  mlh::rt::synchronize(at::kCPU);
  EXPECT_TRUE(events().empty());
  EXPECT_FALSE(mlh::device_traits("cpu").accelerator);
  EXPECT_TRUE(mlh::device_traits("mps").accelerator) << "MPS kernels launch asynchronously: timing must wait";
  EXPECT_TRUE(mlh::device_traits("cuda").accelerator);
}

// AutocastScope accepts exactly what the traits say each device's autocast runs.
TEST(DeviceBackend, AutocastFollowsTheTraits) {
  using mlh::rt::Precision;
  for (const mlh::DeviceTraits& t : mlh::kDeviceTraits) {
    const c10::Device device(t.type);
    for (Precision p : {Precision::kFp16, Precision::kBf16}) {
      const bool traits_say = p == Precision::kFp16
                                  ? t.fp16_autocast
                                  : t.bf16_autocast && MLH_TORCH_VERSION_AT_LEAST(t.bf16_torch[0], t.bf16_torch[1]);
      bool entered = false;
      try {
        mlh::rt::AutocastScope scope(p, device);
        entered = true;
      } catch (const mlh::Error& e) {
        EXPECT_NE(std::string(e.what()).find(t.type), std::string::npos) << e.what();
      }
      EXPECT_EQ(entered, traits_say) << t.type << " " << mlh::rt::to_string(p);
    }
  }
  EXPECT_THROW(mlh::rt::AutocastScope(Precision::kBf16, c10::Device(c10::DeviceType::PrivateUse1)), mlh::Error)
      << "no reduced precision on a backend the table does not know";
}

// The runtime's device-generic code decides from the traits; a test of a device's type
// outside src/backends/ is a decision made twice. The exceptions, each for its reason.
TEST(DeviceBackend, OnlyTheBackendFilesTestADevicesType) {
  const fs::path runtime = MLH_RUNTIME_SOURCE_DIR;
  const std::regex device_test(R"(\.is_(cuda|mps|cpu|xpu)\(\)|DeviceType::(CUDA|MPS|XPU)\b|[=!]= *(at|c10)::k(CPU|CUDA|MPS)\b)");
  const std::vector<std::pair<std::string, std::string>> allowed = {
      // LibTorch 1.13 has autocast functions per device (CPU or CUDA), not per device type.
      {"include/mlh/runtime/compat.hpp", "1.13's per-device autocast functions"},
      // Hand-written CPU kernels check that their input is a CPU tensor.
      {"src/fused_ops.cpp", "a CPU kernel's input check"},
      {"src/fused_attention.cpp", "a CPU kernel's input check"},
      {"src/cpu_linear.cpp", "a CPU kernel's input check"},
  };
  std::vector<std::string> found;
  for (const char* dir : {"src", "include"})
    for (const auto& entry : fs::recursive_directory_iterator(runtime / dir)) {
      const fs::path relative = fs::relative(entry.path(), runtime);
      if (!entry.is_regular_file() || relative.string().rfind("src/backends/", 0) == 0) continue;
      if (entry.path().extension() != ".cpp" && entry.path().extension() != ".hpp") continue;
      bool exempt = false;
      for (const auto& [file, why] : allowed) exempt = exempt || relative == file;
      if (exempt) continue;
      std::ifstream in(entry.path());
      std::string line;
      for (int number = 1; std::getline(in, line); ++number)
        if (std::regex_search(line, device_test)) found.push_back(relative.string() + ":" + std::to_string(number) + ": " + line);
    }
  std::string listing;
  for (const std::string& f : found) listing += "\n  " + f;
  EXPECT_TRUE(found.empty()) << "device-type tests outside sdk/runtime/src/backends/ (read mlh/device_traits.hpp, or move "
                                "the mechanism into the backend's file):"
                             << listing;
}

}  // namespace
