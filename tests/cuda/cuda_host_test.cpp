// The plugin inside the real host: `host --probe` ranks a fixture's A100 first, and on this
// machine (no driver) shows cuda:0 as unavailable with the reason.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdio>

#include "cuda_harness.hpp"

namespace {

using namespace mlh::cuda_test;

std::string host_output(const std::string& arguments) {
  std::string out;
  FILE* pipe = ::popen((std::string(MLH_HOST_PATH) + " " + arguments + " 2>/dev/null").c_str(), "r");
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

}  // namespace
