// The plugin inside the real host: `host --probe` ranks a fixture's A100 first, and on this
// machine (no driver) shows cuda:0 as unavailable with the reason.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "cuda_harness.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace {

using namespace mlh::cuda_test;

// A plugin folder with only the cpu and cuda device plugins: the algorithm plugins beside
// them (built with Debian's CPU-only LibTorch) would make every CUDA device unusable.
std::string device_plugins_only() {
  static const std::string dir = [] {
    const std::filesystem::path from = std::filesystem::path(MLH_CUDA_PLUGIN_PATH).parent_path();
    const std::filesystem::path to =
        std::filesystem::temp_directory_path() / ("mlhost-cuda-host-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(to);
    std::filesystem::permissions(to, std::filesystem::perms(0755), std::filesystem::perm_options::replace);
    for (const char* f : {"cpu.plugin.json", "libmlhost-cpu.so", "cuda.plugin.json", "libmlhost-cuda.so"})
      std::filesystem::copy_file(from / f, to / f, std::filesystem::copy_options::overwrite_existing);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(std::filesystem::temp_directory_path() /
                                      ("mlhost-cuda-host-test-" + std::to_string(::getpid())),
                                  ec);
    });
    return to.string();
  }();
  return dir;
}

std::string host_output(const std::string& arguments) {
  std::string out;
  const std::string command = std::string(MLH_HOST_PATH) + " --no-default-plugin-dir --plugin-dir " +
                              device_plugins_only() + " " + arguments + " 2>/dev/null";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return out;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  ::pclose(pipe);
  return out;
}

const json* device(const json& report, const std::string& id) {
  for (const json& d : report.at("devices"))
    if (d.at("id") == id) return &d;
  return nullptr;
}

TEST(CudaInHost, AFixtureA100IsChosen) {
  FakeMachine machine("a100");
  json report = json::parse(host_output("--probe --json"));
  const json* gpu = device(report, "cuda:0");
  ASSERT_NE(gpu, nullptr) << report.dump(2);
  EXPECT_EQ(gpu->at("name"), "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(gpu->at("available"), true);
  EXPECT_EQ(gpu->at("compute_capability"), "8.0");
  EXPECT_EQ(report.at("chosen"), "cuda:0") << report.dump(2);
  EXPECT_EQ(gpu->at("rank"), 1);
}

TEST(CudaInHost, WithoutADriverCuda0IsUnavailableWithTheReason) {
  if (void* real = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    ::dlclose(real);
    GTEST_SKIP() << "this machine has an NVIDIA driver";
  }
  ScopedEnv driver("MLH_CUDA_DRIVER_LIBRARY", std::nullopt), nvml("MLH_NVML_LIBRARY", std::nullopt);
  json report = json::parse(host_output("--probe --json"));
  const json* gpu = device(report, "cuda:0");
  ASSERT_NE(gpu, nullptr) << report.dump(2);
  EXPECT_EQ(gpu->at("available"), false);
  EXPECT_EQ(
      gpu->at("unavailable_reason").get<std::string>().rfind("no NVIDIA driver: libcuda.so.1 could not be loaded", 0),
      0u);
  EXPECT_NE(report.at("chosen"), "cuda:0");
}

json probe_json(const std::string& extra = "") { return json::parse(host_output("--probe --json " + extra)); }

// `host --print-plan` for a fixture machine: the plan table's text.
std::string plan_text(const std::string& extra = "") { return host_output("--print-plan " + extra); }

TEST(CudaInHost, EachStandInGpuGetsItsRowOfTheRulesTable) {
  struct Row {
    const char* fixture;
    const char* batch;
    const char* checkpointing;
    const char* precision;
    const char* rule;
  };
  for (const Row& r : {Row{"a100", "2048", "off", "bf16", "rule: cuda, >= 40 GB"},
                       Row{"v100", "1024", "off", "fp16", "rule: cuda, 16-24 GB"},
                       Row{"rtx3060", "512", "on", "bf16", "rule: cuda, < 16 GB"}}) {
    SCOPED_TRACE(r.fixture);
    FakeMachine machine(r.fixture);
    const std::string text = plan_text();
    EXPECT_NE(text.find("Plan for cuda:0"), std::string::npos) << text;
    auto line = [&](const std::string& label) {
      const auto at = text.find(label);
      return at == std::string::npos ? std::string() : text.substr(at, text.find('\n', at) - at);
    };
    EXPECT_NE(line("batch size").find(r.batch), std::string::npos) << text;
    EXPECT_NE(line("batch size").find(r.rule), std::string::npos) << text;
    EXPECT_NE(line("gradient checkpointing").find(r.checkpointing), std::string::npos) << text;
    EXPECT_NE(line("precision").find(r.precision), std::string::npos) << text;
    EXPECT_NE(line("model preset").find("full"), std::string::npos) << text;
    EXPECT_NE(line("pinned memory").find("on"), std::string::npos) << text;
  }
}

TEST(CudaInHost, UserSettingsWinOverTheGpuRule) {
  FakeMachine machine("a100");
  const std::string text = plan_text("--batch-size 96 --precision fp16");
  EXPECT_NE(text.find("command line --batch-size"), std::string::npos) << text;
  EXPECT_NE(text.find("command line --precision"), std::string::npos) << text;
}

TEST(CudaInHost, TwoGpusRankTheBetterFirstAndDeviceOverridePicksTheOther) {
  FakeMachine machine("two_gpus");  // cuda:0 an A100 40GB, cuda:1 an RTX 3060 12GB
  json report = probe_json();
  EXPECT_EQ(report.at("chosen"), "cuda:0") << report.dump(2);
  const json* other = device(report, "cuda:1");
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->at("rank"), 2);
  EXPECT_NE(other->at("reason").get<std::string>().find("less memory"), std::string::npos) << other->dump(2);

  report = probe_json("--device cuda:1");
  EXPECT_EQ(report.at("chosen"), "cuda:1") << report.dump(2);
  EXPECT_NE(plan_text("--device cuda:1").find("NVIDIA GeForce RTX 3060"), std::string::npos);
}

TEST(CudaInHost, CudaVisibleDevicesIsHonored) {
  FakeMachine machine("two_gpus", std::string("1"));
  const json report = probe_json();
  const json* only = device(report, "cuda:0");
  ASSERT_NE(only, nullptr) << report.dump(2);
  EXPECT_EQ(only->at("name"), "NVIDIA GeForce RTX 3060") << "index 1 becomes cuda:0";
  EXPECT_EQ(device(report, "cuda:1"), nullptr) << report.dump(2);
}

TEST(CudaInHost, GpusNeedAnAlgorithmWithACudaLibTorch) {
  // toyreg is built against this build's LibTorch. With Debian's CPU-only one in the search
  // path, the stand-in A100 cannot be driven, and the CPU is chosen, with the reason given;
  // with a CUDA LibTorch (the 2.x build) the A100 is usable and chosen.
  FakeMachine machine("a100");
  const json report = probe_json(std::string("--plugin-dir ") + MLH_TOYREG_DIR);
  const json* gpu = device(report, "cuda:0");
  ASSERT_NE(gpu, nullptr) << report.dump(2);
  if (MLH_TOYREG_HAS_CUDA) {
    EXPECT_EQ(gpu->at("available"), true) << gpu->dump(2);
    EXPECT_EQ(report.at("chosen"), "cuda:0") << report.dump(2);
    return;
  }
  EXPECT_EQ(gpu->at("available"), false);
  EXPECT_NE(gpu->at("unavailable_reason").get<std::string>().find("no algorithm plugin has a LibTorch with CUDA"),
            std::string::npos)
      << gpu->dump(2);
  EXPECT_EQ(report.at("chosen"), "cpu:0");
}

}  // namespace
