// The probe rules one at a time, on snapshots built in the test: availability, reasons,
// precisions by macOS version, and memory from partial or broken values.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "mps_probe.hpp"

namespace {

using mlh::DeviceInfo;
using mlh::mps::MacSnapshot;
using mlh::mps::probe_mps;

// An Apple Silicon Mac that qualifies; each test changes what it is about.
MacSnapshot apple_silicon(const std::string& version = "13.4") {
  MacSnapshot s;
  s.os = "Darwin";
  s.machine = "arm64";
  s.brand = "Apple M1 Pro";
  s.os_version = version;
  s.memsize = int64_t{16} << 30;
  s.arm64 = 1;
  s.page_free_count = 1000;
  s.page_size = 16384;
  return s;
}

TEST(MpsProbeRules, OtherSystemsNameThemselves) {
  MacSnapshot s;
  s.os = "FreeBSD";
  EXPECT_EQ(probe_mps(s).unavailable_reason, "MPS needs macOS 12.3+ on Apple Silicon (this is FreeBSD)");
  s.os = "";
  EXPECT_EQ(probe_mps(s).unavailable_reason, "MPS needs macOS 12.3+ on Apple Silicon (this is an unknown OS)");
  // Mac-like values do not matter off macOS.
  MacSnapshot linux_with_values = apple_silicon();
  linux_with_values.os = "Linux";
  EXPECT_FALSE(probe_mps(linux_with_values).available);
}

// A process under Rosetta sees uname "x86_64" on Apple hardware; the GPU is the same.
TEST(MpsProbeRules, RosettaStillFindsAppleSilicon) {
  MacSnapshot s = apple_silicon();
  s.machine = "x86_64";
  DeviceInfo d = probe_mps(s);
  EXPECT_TRUE(d.available) << d.unavailable_reason;
  EXPECT_EQ(nlohmann::json::parse(d.details_json)["architecture"], "x86_64");
}

TEST(MpsProbeRules, EitherTheArm64FlagOrTheBrandTellsAppleSilicon) {
  MacSnapshot brand_only = apple_silicon();
  brand_only.arm64.reset();
  EXPECT_TRUE(probe_mps(brand_only).available);

  MacSnapshot flag_only = apple_silicon();
  flag_only.brand = "";
  DeviceInfo d = probe_mps(flag_only);
  EXPECT_TRUE(d.available);
  EXPECT_EQ(d.name, "Apple GPU (MPS)");
  EXPECT_TRUE(nlohmann::json::parse(d.details_json)["chip"].is_null());

  MacSnapshot apple_prefix_only = apple_silicon();
  apple_prefix_only.arm64 = 0;
  apple_prefix_only.brand = "Applesauce 3000";  // "Apple" without the space is not a chip
  EXPECT_FALSE(probe_mps(apple_prefix_only).available);
}

TEST(MpsProbeRules, NotAppleSiliconReasons) {
  MacSnapshot s = apple_silicon();
  s.arm64 = 0;
  s.brand = "Intel(R) Xeon(R) W-3245 CPU @ 3.20GHz";
  EXPECT_EQ(probe_mps(s).unavailable_reason,
            "MPS needs Apple Silicon (this Mac has an Intel CPU: Intel(R) Xeon(R) W-3245 CPU @ 3.20GHz)");
  s.brand = "AMD Ryzen 9 5950X 16-Core Processor";
  EXPECT_EQ(probe_mps(s).unavailable_reason, "MPS needs Apple Silicon (this Mac's CPU is AMD Ryzen 9 5950X 16-Core Processor)");
  s.brand = "";
  s.arm64.reset();
  EXPECT_EQ(probe_mps(s).unavailable_reason,
            "MPS needs Apple Silicon (this Mac reports neither hw.optional.arm64 nor an Apple CPU brand)");
}

// No macOS upgrade helps an Intel Mac, so that reason wins over an old version.
TEST(MpsProbeRules, HardwareReasonComesFirst) {
  MacSnapshot s = apple_silicon("11.7");
  s.arm64.reset();
  s.brand = "Intel(R) Core(TM) i5-8259U CPU @ 2.30GHz";
  EXPECT_EQ(probe_mps(s).unavailable_reason,
            "MPS needs Apple Silicon (this Mac has an Intel CPU: Intel(R) Core(TM) i5-8259U CPU @ 2.30GHz)");
}

TEST(MpsProbeRules, MacosVersionBoundaries) {
  for (const char* old : {"11.0", "11.7.10", "12.0", "12.2.1", "10.16"}) {
    DeviceInfo d = probe_mps(apple_silicon(old));
    EXPECT_FALSE(d.available) << old;
    EXPECT_EQ(d.unavailable_reason, std::string("MPS needs macOS 12.3 or later (this is macOS ") + old + ")");
    EXPECT_EQ(d.driver_version, old);
  }
  for (const char* ok : {"12.3", "12.3.1", "12.7.6", "13.0", "13.6.9", "14.0", "14.5", "15", "15.1", "26.0"})
    EXPECT_TRUE(probe_mps(apple_silicon(ok)).available) << ok;
}

TEST(MpsProbeRules, Bf16FromMacos14) {
  const uint32_t base = MLH_PRECISION_FP32 | MLH_PRECISION_FP16;
  EXPECT_EQ(probe_mps(apple_silicon("12.3")).precisions, base);
  EXPECT_EQ(probe_mps(apple_silicon("13.6.9")).precisions, base);
  EXPECT_EQ(probe_mps(apple_silicon("14.0")).precisions, base | MLH_PRECISION_BF16);
  EXPECT_EQ(probe_mps(apple_silicon("15")).precisions, base | MLH_PRECISION_BF16);
  EXPECT_EQ(probe_mps(apple_silicon("15")).fast_precisions, MLH_PRECISION_FP32);
}

TEST(MpsProbeRules, UnknownVersionIsTooOldAndSaysWhy) {
  DeviceInfo missing = probe_mps(apple_silicon(""));
  EXPECT_FALSE(missing.available);
  EXPECT_EQ(missing.unavailable_reason,
            "MPS needs macOS 12.3 or later (the macOS version is unknown: kern.osproductversion is missing)");
  EXPECT_EQ(missing.driver_version, "");

  DeviceInfo garbage = probe_mps(apple_silicon("garbage"));
  EXPECT_FALSE(garbage.available);
  EXPECT_EQ(garbage.unavailable_reason,
            "MPS needs macOS 12.3 or later (the macOS version is unknown: kern.osproductversion reads \"garbage\")");
  EXPECT_EQ(garbage.runtime_version, "");
  EXPECT_TRUE(nlohmann::json::parse(garbage.details_json)["macos_version"].is_null());
}

TEST(MpsProbeRules, MemoryFromPartialValues) {
  MacSnapshot s = apple_silicon();
  DeviceInfo d = probe_mps(s);
  EXPECT_EQ(d.memory_total_bytes, int64_t{16} << 30);
  EXPECT_EQ(d.memory_free_bytes, 1000 * 16384);

  s.page_size.reset();
  EXPECT_EQ(probe_mps(s).memory_free_bytes, MLH_UNKNOWN);
  s = apple_silicon();
  s.page_free_count.reset();
  EXPECT_EQ(probe_mps(s).memory_free_bytes, MLH_UNKNOWN);
  s.page_free_count = -5;
  EXPECT_EQ(probe_mps(s).memory_free_bytes, MLH_UNKNOWN);
  s = apple_silicon();
  s.page_size = 0;
  EXPECT_EQ(probe_mps(s).memory_free_bytes, MLH_UNKNOWN);

  s = apple_silicon();
  s.memsize.reset();
  d = probe_mps(s);
  EXPECT_EQ(d.memory_total_bytes, MLH_UNKNOWN);
  EXPECT_EQ(d.memory_free_bytes, 1000 * 16384);
  EXPECT_TRUE(nlohmann::json::parse(d.details_json)["memsize"].is_null());
  s.memsize = 0;
  EXPECT_EQ(probe_mps(s).memory_total_bytes, MLH_UNKNOWN);
}

// A garbage page count must neither overflow nor report more free memory than exists.
TEST(MpsProbeRules, FreeMemoryIsCappedAtMemsize) {
  MacSnapshot s = apple_silicon();
  s.page_free_count = INT64_MAX / 2;
  EXPECT_EQ(probe_mps(s).memory_free_bytes, int64_t{16} << 30);
  s.memsize.reset();
  EXPECT_EQ(probe_mps(s).memory_free_bytes, INT64_MAX / 16384 * 16384);
}

}  // namespace
