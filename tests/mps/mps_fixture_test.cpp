// The MPS record of each recorded machine in tests/mps/fixtures, read through the same
// conversion the plugin applies to the live system.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "mps_probe.hpp"
#include "mps_snapshot.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace {

using mlh::DeviceInfo;
using nlohmann::json;

DeviceInfo probe_fixture(const std::string& name) {
  std::ifstream in(std::string(MLH_MPS_FIXTURE_DIR) + "/" + name);
  EXPECT_TRUE(in) << "missing fixture " << name;
  std::stringstream text;
  text << in.rdbuf();
  return mlh::mps::probe_mps(mlh::mps::snapshot_from_values(mlh::mps::parse_values(text.str())));
}

// What every record has, available or not.
void expect_identity(const DeviceInfo& d) {
  EXPECT_EQ(d.kind, "mps");
  EXPECT_EQ(d.index, 0);
  EXPECT_EQ(d.device_class, MLH_DEVICE_CLASS_UNIFIED_GPU);
  EXPECT_EQ(d.torch_device, "mps");
  EXPECT_EQ(d.vendor, "Apple");
}

constexpr uint32_t kMpsLimitations = MLH_LIMIT_NO_DISTRIBUTED | MLH_LIMIT_NO_FP16_AUTOCAST | MLH_LIMIT_NO_GRAPH_COMPILE;

TEST(MpsFixtures, M1On13_4IsAvailableWithoutBf16) {
  DeviceInfo d = probe_fixture("m1_16gb_macos13_4.txt");
  expect_identity(d);
  EXPECT_TRUE(d.available);
  EXPECT_EQ(d.unavailable_reason, "");
  EXPECT_EQ(d.name, "Apple M1 GPU");
  EXPECT_EQ(d.memory_total_bytes, int64_t{16} << 30);
  EXPECT_EQ(d.memory_free_bytes, int64_t{61432} * 16384);
  EXPECT_TRUE(d.memory_unified);
  EXPECT_EQ(d.compute_units, MLH_UNKNOWN);
  EXPECT_EQ(d.precisions, MLH_PRECISION_FP32 | MLH_PRECISION_FP16);
  EXPECT_EQ(d.fast_precisions, MLH_PRECISION_FP32);
  EXPECT_EQ(d.limitations, kMpsLimitations);
  EXPECT_EQ(d.driver_version, "13.4");
  EXPECT_EQ(d.runtime_version, "13.4");
  EXPECT_EQ(json::parse(d.details_json), json::parse(R"({"macos_version": "13.4", "chip": "Apple M1",
      "apple_silicon": true, "memsize": 17179869184, "architecture": "arm64"})"));
}

TEST(MpsFixtures, M2MaxOn14_5AddsBf16) {
  DeviceInfo d = probe_fixture("m2max_32gb_macos14_5.txt");
  expect_identity(d);
  EXPECT_TRUE(d.available);
  EXPECT_EQ(d.name, "Apple M2 Max GPU");
  EXPECT_EQ(d.memory_total_bytes, int64_t{32} << 30);
  EXPECT_EQ(d.memory_free_bytes, int64_t{412517} * 16384);
  EXPECT_EQ(d.precisions, MLH_PRECISION_FP32 | MLH_PRECISION_FP16 | MLH_PRECISION_BF16);
  EXPECT_EQ(d.fast_precisions, MLH_PRECISION_FP32);
  EXPECT_EQ(d.limitations, kMpsLimitations);
  EXPECT_EQ(d.limitations & MLH_LIMIT_NO_MEMORY_FRACTION, 0u);
  EXPECT_EQ(d.driver_version, "14.5");
  json details = json::parse(d.details_json);
  EXPECT_EQ(details["chip"], "Apple M2 Max");
  EXPECT_EQ(details["macos_version"], "14.5");
  EXPECT_EQ(details["memsize"], int64_t{34359738368});
}

TEST(MpsFixtures, IntelMacNeedsAppleSilicon) {
  DeviceInfo d = probe_fixture("intel_i9_macos13.txt");
  expect_identity(d);
  EXPECT_FALSE(d.available);
  EXPECT_EQ(d.name, "Apple GPU (MPS)");
  EXPECT_EQ(d.unavailable_reason,
            "MPS needs Apple Silicon (this Mac has an Intel CPU: Intel(R) Core(TM) i9-9980HK CPU @ 2.40GHz)");
  EXPECT_EQ(d.driver_version, "13.6.7");
  EXPECT_EQ(d.memory_total_bytes, MLH_UNKNOWN);
  EXPECT_EQ(d.precisions, 0u);
  EXPECT_EQ(d.limitations, 0u);
  EXPECT_EQ(json::parse(d.details_json), json::parse(R"({"macos_version": "13.6.7",
      "chip": "Intel(R) Core(TM) i9-9980HK CPU @ 2.40GHz", "apple_silicon": false, "memsize": 34359738368,
      "architecture": "x86_64"})"));
}

TEST(MpsFixtures, M1On12_1IsTooOld) {
  DeviceInfo d = probe_fixture("m1_8gb_macos12_1.txt");
  expect_identity(d);
  EXPECT_FALSE(d.available);
  EXPECT_EQ(d.name, "Apple GPU (MPS)");
  EXPECT_EQ(d.unavailable_reason, "MPS needs macOS 12.3 or later (this is macOS 12.1)");
  EXPECT_EQ(d.driver_version, "12.1");
  EXPECT_EQ(json::parse(d.details_json)["apple_silicon"], true);
}

TEST(MpsFixtures, LinuxIsNotMacos) {
  DeviceInfo d = probe_fixture("linux_x86_64.txt");
  expect_identity(d);
  EXPECT_FALSE(d.available);
  EXPECT_EQ(d.name, "Apple GPU (MPS)");
  EXPECT_EQ(d.unavailable_reason, "MPS needs macOS 12.3+ on Apple Silicon (this is Linux)");
  EXPECT_EQ(d.driver_version, "");
  EXPECT_EQ(d.details_json, "");
  EXPECT_EQ(d.memory_total_bytes, MLH_UNKNOWN);
  EXPECT_EQ(d.precisions, 0u);
}

}  // namespace
