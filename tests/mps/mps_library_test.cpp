// The built plugin library through the C ABI, as the host loads it. Off macOS it must
// load, negotiate and answer with one unavailable MPS device.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <map>
#include <mlh/mlh.h>

#include "device_plugin_test.hpp"
#include <string>
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace {

bool is_macos() {
  utsname names{};
  return ::uname(&names) == 0 && std::string(names.sysname) == "Darwin";
}

class MpsLibrary : public mlh::testing::DevicePluginTest {
 protected:
  static void SetUpTestSuite() { load_library(MLH_MPS_PLUGIN_PATH); }
  static void TearDownTestSuite() { unload_library(); }

  std::map<std::string, std::string> prepare(const char* plan) {
    mlh_prepare_request request{sizeof(mlh_prepare_request), 0, plan};
    const mlh_env_var* vars = nullptr;
    uint32_t count = 0;
    mlh_error error = make_error();
    EXPECT_EQ(table_->prepare(instance_, &request, &vars, &count, &error), MLH_OK) << error.message;
    std::map<std::string, std::string> env;
    for (uint32_t i = 0; i < count; ++i) env[vars[i].name] = vars[i].value;
    return env;
  }

};

TEST_F(MpsLibrary, NegotiatesAsTheMpsDevicePlugin) { expect_identity("mps", "0.1.0"); }

TEST_F(MpsLibrary, ProbeGivesOneMpsRecord) {
  const mlh_device_record* records = nullptr;
  uint32_t count = 0;
  mlh_error error = make_error();
  ASSERT_EQ(table_->probe(instance_, &records, &count, &error), MLH_OK) << error.message;
  ASSERT_EQ(count, 1u);
  const mlh_device_record& r = records[0];
  EXPECT_EQ(r.struct_size, sizeof(mlh_device_record));
  EXPECT_STREQ(r.kind, "mps");
  EXPECT_EQ(r.index, 0);
  EXPECT_EQ(r.device_class, MLH_DEVICE_CLASS_UNIFIED_GPU);
  EXPECT_STREQ(r.torch_device, "mps");
  if (is_macos()) GTEST_SKIP() << "availability depends on this Mac; the fixtures test the rules";

  EXPECT_EQ(r.available, 0);
  EXPECT_STREQ(r.name, "Apple GPU (MPS)");
  ASSERT_NE(r.unavailable_reason, nullptr);
  std::string reason = r.unavailable_reason;
  EXPECT_NE(reason.find("macOS 12.3"), std::string::npos) << reason;
  EXPECT_NE(reason.find("Apple Silicon"), std::string::npos) << reason;
  EXPECT_EQ(r.memory_total_bytes, MLH_UNKNOWN);
  EXPECT_EQ(r.precisions, 0u);
  EXPECT_EQ(r.details_json, nullptr);
}

TEST_F(MpsLibrary, PrepareSetsTheMpsEnvironment) {
  EXPECT_EQ(prepare("{}"), (std::map<std::string, std::string>{{"PYTORCH_ENABLE_MPS_FALLBACK", "1"}}));
  std::map<std::string, std::string> env = prepare(
      R"({"memory_fraction": 0.6, "threads": {"intra_op": 4}, "omp_proc_bind": "spread", "omp_wait_policy": "passive"})");
  EXPECT_EQ(env["PYTORCH_MPS_HIGH_WATERMARK_RATIO"], "0.6");
  // Only MPS's own variables: the CPU side (threads, OpenMP, allocator) is the host's.
  for (const char* cpu_side : {"OMP_NUM_THREADS", "OMP_PROC_BIND", "OMP_WAIT_POLICY", "LD_PRELOAD"})
    EXPECT_EQ(env.count(cpu_side), 0u) << cpu_side;
}

TEST_F(MpsLibrary, PrepareRejectsOtherDevicesAndBadPlans) {
  const mlh_env_var* vars = nullptr;
  uint32_t count = 0;
  mlh_error error = make_error();
  mlh_prepare_request other_device{sizeof(mlh_prepare_request), 1, "{}"};
  EXPECT_EQ(table_->prepare(instance_, &other_device, &vars, &count, &error), MLH_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(error.message, "device index 1 does not exist: the mps plugin has only device 0");

  error = make_error();
  mlh_prepare_request bad_plan{sizeof(mlh_prepare_request), 0, R"({"memory_fraction": 2})"};
  EXPECT_EQ(table_->prepare(instance_, &bad_plan, &vars, &count, &error), MLH_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(error.message).find("memory_fraction"), std::string::npos) << error.message;
}

TEST_F(MpsLibrary, TelemetryOnlyOnMacos) {
  mlh_telemetry_sample sample{};
  sample.struct_size = sizeof(sample);
  mlh_error error = make_error();
  EXPECT_EQ(table_->telemetry(instance_, 1, ::getpid(), &sample, &error), MLH_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(error.message).find("device index 1"), std::string::npos) << error.message;

  error = make_error();
  mlh_status status = table_->telemetry(instance_, 0, ::getpid(), &sample, &error);
  if (is_macos()) {
    ASSERT_EQ(status, MLH_OK) << error.message;
    EXPECT_EQ(sample.valid_fields, MLH_TELEMETRY_MEMORY_USED | MLH_TELEMETRY_MEMORY_TOTAL);
    EXPECT_GT(sample.memory_used_bytes, 0);
  } else {
    EXPECT_EQ(status, MLH_ERR_UNSUPPORTED);
    EXPECT_EQ(error.code, MLH_ERR_UNSUPPORTED);
    EXPECT_STREQ(error.message, "the mps plugin reports telemetry only on macOS");
    EXPECT_EQ(sample.valid_fields, 0u);
  }
}

}  // namespace
