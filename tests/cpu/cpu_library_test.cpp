// The built plugin library through the C ABI, as the host loads it, checked against the
// live system measured here independently of the plugin's own code.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <map>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <mlh/mlh.h>

#include "device_plugin_test.hpp"
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace {

std::vector<std::string> tokens(const std::string& text, char separator) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string token; std::getline(in, token, separator);) out.push_back(token);
  return out;
}

std::optional<std::string> first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

// The process's own cgroup path for a v1 controller, or for v2 when `controller` is "".
std::optional<std::string> own_cgroup(const std::string& controller) {
  std::ifstream in("/proc/self/cgroup");
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> parts = tokens(line, ':');
    if (parts.size() < 3) continue;
    std::vector<std::string> controllers = tokens(parts[1], ',');
    bool match = controller.empty() ? parts[0] == "0" && parts[1].empty()
                                    : std::find(controllers.begin(), controllers.end(), controller) != controllers.end();
    if (match) return parts[2] == "/" ? "" : parts[2];
  }
  return std::nullopt;
}

// A CPU quota on the process's own cgroup at the usual mount points: a simpler rule than
// the plugin's (no ancestors), which is what CI runners and containers need.
std::optional<double> own_cpu_quota() {
  if (std::optional<std::string> path = own_cgroup(""))
    if (std::optional<std::string> max = first_line("/sys/fs/cgroup" + *path + "/cpu.max")) {
      std::vector<std::string> parts = tokens(*max, ' ');
      if (parts.size() == 2 && parts[0] != "max") return std::stod(parts[0]) / std::stod(parts[1]);
    }
  if (std::optional<std::string> path = own_cgroup("cpu"))
    for (const char* mount : {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"}) {
      std::optional<std::string> quota = first_line(mount + *path + "/cpu.cfs_quota_us");
      std::optional<std::string> period = first_line(mount + *path + "/cpu.cfs_period_us");
      if (quota && period && std::stod(*quota) > 0) return std::stod(*quota) / std::stod(*period);
    }
  return std::nullopt;
}

std::optional<double> own_memory_limit() {
  if (std::optional<std::string> path = own_cgroup(""))
    if (std::optional<std::string> max = first_line("/sys/fs/cgroup" + *path + "/memory.max"); max && *max != "max")
      return std::stod(*max);
  if (std::optional<std::string> path = own_cgroup("memory"))
    if (std::optional<std::string> limit = first_line("/sys/fs/cgroup/memory" + *path + "/memory.limit_in_bytes"))
      if (std::stod(*limit) < std::ldexp(1.0, 62)) return std::stod(*limit);
  return std::nullopt;
}

bool cpuinfo_has_flag(const std::string& flag) {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("flags", 0) != 0) continue;
    std::vector<std::string> words = tokens(line.substr(line.find(':') + 1), ' ');
    return std::find(words.begin(), words.end(), flag) != words.end();
  }
  return false;
}

class CpuLibrary : public mlh::testing::DevicePluginTest {
 protected:
  static void SetUpTestSuite() { load_library(MLH_CPU_PLUGIN_PATH); }
  static void TearDownTestSuite() { unload_library(); }

  const mlh_device_record& probe_one() {
    const mlh_device_record* records = nullptr;
    uint32_t count = 0;
    mlh_error error = make_error();
    EXPECT_EQ(table_->probe(instance_, &records, &count, &error), MLH_OK) << error.message;
    EXPECT_EQ(count, 1u);
    return records[0];
  }

};

TEST_F(CpuLibrary, NegotiatesAsTheCpuDevicePlugin) { expect_identity("cpu", "0.1.0"); }

TEST_F(CpuLibrary, RefusesAnotherAbiMajor) {
  mlh_negotiate_response response;
  mlh_error error = make_error();
  EXPECT_EQ(negotiate(2, &response, &error), MLH_ERR_VERSION);
  EXPECT_EQ(error.code, MLH_ERR_VERSION);
  EXPECT_GT(std::string(error.message).size(), 0u);
}

TEST_F(CpuLibrary, ProbeMatchesTheLiveSystem) {
  const mlh_device_record& r = probe_one();
  EXPECT_EQ(r.struct_size, sizeof(mlh_device_record));
  EXPECT_EQ(r.device_class, MLH_DEVICE_CLASS_CPU);
  EXPECT_EQ(r.index, 0);
  EXPECT_EQ(r.available, 1);
  EXPECT_STREQ(r.kind, "cpu");
  EXPECT_STREQ(r.torch_device, "cpu");
  ASSERT_NE(r.name, nullptr);
  EXPECT_GT(std::string(r.name).size(), 0u);

  cpu_set_t affinity;
  ASSERT_EQ(::sched_getaffinity(0, sizeof(affinity), &affinity), 0);
  int expected_logical = CPU_COUNT(&affinity);
  if (std::optional<double> quota = own_cpu_quota())
    expected_logical = std::min(expected_logical, std::max(1, static_cast<int>(std::ceil(*quota))));
  EXPECT_EQ(r.logical_units, expected_logical);
  EXPECT_GE(r.compute_units, 1);
  EXPECT_LE(r.compute_units, r.logical_units);
  EXPECT_EQ(r.recommended_threads, r.compute_units);

  double physical = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  double expected_total = physical;
  if (std::optional<double> limit = own_memory_limit()) expected_total = std::min(physical, *limit);
  EXPECT_NEAR(static_cast<double>(r.memory_total_bytes), expected_total, expected_total * 0.01);
  EXPECT_GT(r.memory_free_bytes, 0);
  EXPECT_LE(r.memory_free_bytes, r.memory_total_bytes);
  EXPECT_EQ(r.memory_unified, 1);

  std::vector<std::string> features = tokens(r.features ? r.features : "", ',');
  bool has_avx2 = std::find(features.begin(), features.end(), "avx2") != features.end();
  EXPECT_EQ(has_avx2, cpuinfo_has_flag("avx2"));
  EXPECT_EQ(r.fast_precisions & MLH_PRECISION_FP32, MLH_PRECISION_FP32);

  ASSERT_NE(r.details_json, nullptr);
  nlohmann::json details = nlohmann::json::parse(r.details_json);
  EXPECT_EQ(details["logical_cpus_usable"], CPU_COUNT(&affinity));
}

// The CPU has nothing of its own to prepare: the worker's threads and allocator are the CPU
// side of every run, which the host sets from the plan (plan/worker_environment.hpp).
TEST_F(CpuLibrary, PrepareLeavesTheCpuSideToTheHost) {
  for (const char* plan : {"{}", R"({"threads": {"intra_op": 2, "inter_op": 1}, "omp_wait_policy": "passive",
                                     "allocator": {"name": "jemalloc", "library": "/usr/lib/libjemalloc.so.2"}})"}) {
    mlh_prepare_request request{sizeof(mlh_prepare_request), 0, plan};
    const mlh_env_var* vars = nullptr;
    uint32_t count = 7;
    mlh_error error = make_error();
    ASSERT_EQ(table_->prepare(instance_, &request, &vars, &count, &error), MLH_OK) << error.message;
    EXPECT_EQ(count, 0u) << plan;
  }
}

TEST_F(CpuLibrary, TelemetryOfThisProcess) {
  mlh_telemetry_sample sample{};
  sample.struct_size = sizeof(sample);
  mlh_error error = make_error();
  ASSERT_EQ(table_->telemetry(instance_, 0, ::getpid(), &sample, &error), MLH_OK) << error.message;
  uint32_t expected = MLH_TELEMETRY_UTILIZATION | MLH_TELEMETRY_MEMORY_USED | MLH_TELEMETRY_MEMORY_TOTAL;
  EXPECT_EQ(sample.valid_fields, expected);
  EXPECT_GE(sample.utilization_percent, 0.0);
  EXPECT_GT(sample.memory_used_bytes, 0);

  EXPECT_EQ(table_->telemetry(instance_, 0, 2147483647, &sample, &error), MLH_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(error.message, "no process 2147483647");
  EXPECT_EQ(table_->telemetry(instance_, 3, ::getpid(), &sample, &error), MLH_ERR_INVALID_ARGUMENT);
}

// The host probes every plugin at startup, so a probe must cost a few milliseconds.
TEST_F(CpuLibrary, ProbeIsCheap) {
  constexpr int kRounds = 100;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRounds; ++i) {
    mlh_plugin_instance* instance = nullptr;
    const mlh_device_record* records = nullptr;
    uint32_t count = 0;
    mlh_error error = make_error();
    ASSERT_EQ(table_->create(&instance, &error), MLH_OK);
    ASSERT_EQ(table_->probe(instance, &records, &count, &error), MLH_OK);
    table_->destroy(instance);
  }
  double per_call_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / kRounds;
  std::cout << "create+probe+destroy: " << per_call_ms << " ms per call\n";
  RecordProperty("probe_ms", std::to_string(per_call_ms));
  EXPECT_LT(per_call_ms, 20.0);
}

}  // namespace
