#include "probe/ranking.hpp"

#include <gtest/gtest.h>

namespace mlhost {
namespace {

Device make(const std::string& plugin, const std::string& kind, int index, int32_t cls, double mem_gib,
            int units = 8, int cc_major = MLH_UNKNOWN, int cc_minor = 0, int hint = 0) {
  Device d;
  d.plugin = plugin;
  d.kind = kind;
  d.index = index;
  d.name = kind + " device " + std::to_string(index);
  d.torch_device = kind == "cpu" ? "cpu" : kind + ":" + std::to_string(index);
  d.device_class = cls;
  d.available = true;
  d.memory_total_bytes = static_cast<int64_t>(mem_gib * (1ull << 30));
  d.compute_units = units;
  d.capability_major = cc_major;
  d.capability_minor = cc_minor;
  d.score_hint = hint;
  return d;
}

Device cpu() { return make("cpu", "cpu", 0, MLH_DEVICE_CLASS_CPU, 24, 2); }
Device mps() { return make("mps", "mps", 0, MLH_DEVICE_CLASS_UNIFIED_GPU, 16, 10); }
Device a100(int i = 0) { return make("cuda", "cuda", i, MLH_DEVICE_CLASS_DISCRETE_GPU, 40, 108, 8, 0); }
Device rtx3060(int i = 0) { return make("cuda", "cuda", i, MLH_DEVICE_CLASS_DISCRETE_GPU, 12, 28, 8, 6); }

std::vector<std::string> order(const Ranking& r) {
  std::vector<std::string> ids;
  for (const auto& d : r.devices) ids.push_back(d.device.id() + (d.position ? "" : "(x)"));
  return ids;
}

const RankedDevice& entry(const Ranking& r, const std::string& id) {
  for (const auto& d : r.devices)
    if (d.device.id() == id) return d;
  throw std::runtime_error("no " + id);
}

TEST(Ranking, DeviceClassComesFirst) {
  Ranking r = rank_devices({cpu(), mps(), rtx3060()}, {}, false);
  EXPECT_EQ(order(r), (std::vector<std::string>{"cuda:0", "mps:0", "cpu:0"}));
  ASSERT_NE(r.chosen_device(), nullptr);
  EXPECT_EQ(r.chosen_device()->id(), "cuda:0");
  EXPECT_TRUE(r.devices[0].chosen);
  EXPECT_NE(entry(r, "cpu:0").reason.find("lower device class (cpu)"), std::string::npos) << entry(r, "cpu:0").reason;
  EXPECT_NE(entry(r, "mps:0").reason.find("unified memory gpu"), std::string::npos);
}

TEST(Ranking, ThenArchitectureThenMemoryThenUnits) {
  // Same generation (8.x): the A100 wins on memory; the 3060's higher minor does not count.
  Ranking r = rank_devices({rtx3060(0), a100(1)}, {}, false);
  EXPECT_EQ(r.chosen_device()->id(), "cuda:1");
  EXPECT_NE(entry(r, "cuda:0").reason.find("less memory (12.0 GiB)"), std::string::npos) << entry(r, "cuda:0").reason;

  // A newer generation wins before memory: an H100-class 9.0 with less memory over the A100.
  Device hopper = make("cuda", "cuda", 2, MLH_DEVICE_CLASS_DISCRETE_GPU, 24, 132, 9, 0);
  r = rank_devices({a100(0), hopper}, {}, false);
  EXPECT_EQ(r.chosen_device()->id(), "cuda:2");
  EXPECT_NE(entry(r, "cuda:0").reason.find("older architecture (compute capability 8.0)"), std::string::npos)
      << entry(r, "cuda:0").reason;

  Device small = a100(1);
  small.memory_total_bytes /= 2;
  r = rank_devices({small, a100(0)}, {}, false);
  EXPECT_EQ(r.chosen_device()->id(), "cuda:0");
  EXPECT_NE(entry(r, "cuda:1").reason.find("less memory (20.0 GiB)"), std::string::npos) << entry(r, "cuda:1").reason;

  Device fewer = a100(1);
  fewer.compute_units = 100;
  r = rank_devices({fewer, a100(0)}, {}, false);
  EXPECT_EQ(r.chosen_device()->id(), "cuda:0");
  EXPECT_NE(entry(r, "cuda:1").reason.find("fewer compute units"), std::string::npos);
}

TEST(Ranking, HintOnlyBreaksTies) {
  Device hinted = cpu();
  hinted.plugin = "zcpu";
  hinted.kind = "zcpu";
  hinted.score_hint = 100;
  // A huge hint does not beat a better class...
  EXPECT_EQ(rank_devices({hinted, rtx3060()}, {}, false).chosen_device()->id(), "cuda:0");
  // ...but decides between otherwise equal devices.
  Ranking r = rank_devices({cpu(), hinted}, {}, false);
  EXPECT_EQ(r.chosen_device()->id(), "zcpu:0");
  EXPECT_NE(entry(r, "cpu:0").reason.find("lower plugin preference"), std::string::npos);
}

TEST(Ranking, IsDeterministicForEqualDevices) {
  Ranking a = rank_devices({a100(1), a100(0)}, {}, false);
  Ranking b = rank_devices({a100(0), a100(1)}, {}, false);
  EXPECT_EQ(order(a), order(b));
  EXPECT_EQ(a.chosen_device()->id(), "cuda:0");
  EXPECT_NE(entry(a, "cuda:1").reason.find("ranks equal"), std::string::npos);
}

TEST(Ranking, UnavailableDevicesKeepTheirReason) {
  Device broken = a100();
  broken.available = false;
  broken.unavailable_reason = "driver too old";
  Ranking r = rank_devices({broken, cpu()}, {}, false);
  EXPECT_EQ(r.chosen_device()->id(), "cpu:0");
  EXPECT_EQ(entry(r, "cuda:0").position, 0);
  EXPECT_EQ(entry(r, "cuda:0").reason, "unavailable: driver too old");
  EXPECT_NE(entry(r, "cpu:0").reason.find("the only usable device"), std::string::npos);
}

TEST(Ranking, NoGpuExcludesGpus) {
  Ranking r = rank_devices({a100(), mps(), cpu()}, {}, true);
  EXPECT_EQ(r.chosen_device()->id(), "cpu:0");
  EXPECT_EQ(entry(r, "cuda:0").reason, "excluded by --no-gpu");
  EXPECT_EQ(entry(r, "mps:0").reason, "excluded by --no-gpu");
}

TEST(Ranking, UserOverrideWins) {
  Ranking r = rank_devices({a100(0), a100(1), cpu()}, DeviceRequest::parse("cpu"), false);
  EXPECT_EQ(r.chosen_device()->id(), "cpu:0");
  EXPECT_EQ(entry(r, "cuda:0").reason, "not requested (--device cpu)");
  EXPECT_NE(entry(r, "cpu:0").reason.find("requested with --device cpu"), std::string::npos);

  r = rank_devices({a100(0), a100(1), cpu()}, DeviceRequest::parse("cuda:1"), false);
  EXPECT_EQ(r.chosen_device()->id(), "cuda:1");
}

TEST(Ranking, DeviceGpuIsTheBestGpuOfAnyPlugin) {
  Ranking r = rank_devices({cpu(), a100(0), a100(1)}, DeviceRequest::parse("gpu"), false);
  ASSERT_NE(r.chosen_device(), nullptr) << r.error;
  EXPECT_EQ(r.chosen_device()->id(), "cuda:0");
  EXPECT_EQ(entry(r, "cpu:0").reason, "not requested (--device gpu)");
  r = rank_devices({cpu(), a100(0), a100(1)}, DeviceRequest::parse("gpu:1"), false);
  EXPECT_EQ(r.chosen_device()->id(), "cuda:1");
  r = rank_devices({cpu()}, DeviceRequest::parse("gpu"), false);
  EXPECT_EQ(r.chosen_device(), nullptr);
  EXPECT_EQ(r.error, "no device matches --device gpu");
}

TEST(Ranking, OverrideThatCannotBeMetSaysWhy) {
  Ranking r = rank_devices({cpu()}, DeviceRequest::parse("cuda"), false);
  EXPECT_EQ(r.chosen_device(), nullptr);
  EXPECT_EQ(r.error, "no device matches --device cuda");

  Device broken = a100();
  broken.available = false;
  broken.unavailable_reason = "no driver";
  r = rank_devices({broken, cpu()}, DeviceRequest::parse("cuda:0"), false);
  EXPECT_EQ(r.chosen_device(), nullptr);
  EXPECT_NE(r.error.find("no driver"), std::string::npos) << r.error;

  EXPECT_EQ(rank_devices({}, {}, false).error, "no device plugin reported a device");
}

TEST(DeviceRequest, Parses) {
  EXPECT_TRUE(DeviceRequest::parse("auto").is_auto());
  EXPECT_TRUE(DeviceRequest::parse("").is_auto());
  DeviceRequest r = DeviceRequest::parse("cuda:3");
  EXPECT_EQ(r.kind, "cuda");
  EXPECT_EQ(r.index, 3);
  EXPECT_EQ(r.str(), "cuda:3");
  EXPECT_EQ(DeviceRequest::parse("mps").index, -1);
  // Any plugin's kind, with the characters plugin names allow.
  EXPECT_EQ(DeviceRequest::parse("abi-v1-0:0").kind, "abi-v1-0");
  EXPECT_EQ(DeviceRequest::parse("my_npu").kind, "my_npu");
  for (const char* bad : {"gpu!", "cuda:", "cuda:x", ":1", "CUDA", "cuda:1:2", "-cuda", "9pu"})
    EXPECT_THROW(DeviceRequest::parse(bad), std::invalid_argument) << bad;
}

}  // namespace
}  // namespace mlhost
