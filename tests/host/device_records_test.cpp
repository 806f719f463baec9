#include <gtest/gtest.h>

#include "probe/device.hpp"

namespace mlhost {
namespace {

mlh_device_record good_record() {
  mlh_device_record r{};
  r.struct_size = sizeof r;
  r.device_class = MLH_DEVICE_CLASS_DISCRETE_GPU;
  r.index = 1;
  r.available = 1;
  r.kind = "cuda";
  r.name = "NVIDIA A100-SXM4-40GB";
  r.vendor = "NVIDIA";
  r.torch_device = "cuda:1";
  r.memory_total_bytes = 40ll << 30;
  r.memory_free_bytes = 39ll << 30;
  r.compute_units = 108;
  r.logical_units = MLH_UNKNOWN;
  r.capability_major = 8;
  r.capability_minor = 0;
  r.precisions = MLH_PRECISION_FP32 | MLH_PRECISION_FP16 | MLH_PRECISION_BF16 | MLH_PRECISION_TF32;
  r.fast_precisions = r.precisions;
  r.limitations = MLH_LIMIT_NO_GRAPH_COMPILE;
  r.recommended_threads = MLH_UNKNOWN;
  r.features = "tensor_cores,nvlink";
  r.details_json = R"({"sm_clock_mhz": 1410})";
  return r;
}

std::string malformed(const mlh_device_record* records, uint32_t count) {
  try {
    devices_from_records("p", records, count);
  } catch (const MalformedRecord& e) {
    return e.what();
  }
  return "";
}

TEST(DeviceRecords, CopiesEveryFieldAndRoundTripsThroughJson) {
  mlh_device_record r = good_record();
  std::vector<Device> d = devices_from_records("cuda", &r, 1);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].id(), "cuda:1");
  EXPECT_EQ(d[0].plugin, "cuda");
  EXPECT_EQ(d[0].feature_list(), (std::vector<std::string>{"tensor_cores", "nvlink"}));
  EXPECT_EQ(d[0].details()["sm_clock_mhz"], 1410);
  EXPECT_TRUE(d[0].uuid.empty());

  nlohmann::json j = device_to_json(d[0]);
  EXPECT_EQ(j["compute_capability"], "8.0");
  EXPECT_EQ(j["precisions"], nlohmann::json::parse(R"(["fp32","fp16","bf16","tf32"])"));
  EXPECT_EQ(j["logical_units"], nullptr);
  EXPECT_EQ(j["limitations"], nlohmann::json::parse(R"(["no_graph_compile"])"));
  Device back = device_from_json(j);
  EXPECT_EQ(device_to_json(back), j);
}

TEST(DeviceRecords, NoRecordsIsFine) { EXPECT_TRUE(devices_from_records("p", nullptr, 0).empty()); }

TEST(DeviceRecords, GarbageIsRejectedWithTheField) {
  mlh_device_record r = good_record();
  EXPECT_NE(malformed(nullptr, 2).find("returned no records"), std::string::npos);
  EXPECT_NE(malformed(&r, 100000).find("more than"), std::string::npos);

  auto with = [&](auto change) {
    mlh_device_record bad = good_record();
    change(bad);
    return malformed(&bad, 1);
  };
  EXPECT_NE(with([](auto& b) { b.name = nullptr; }).find("field 'name' is NULL"), std::string::npos);
  EXPECT_NE(with([](auto& b) { b.kind = ""; }).find("field 'kind' is empty"), std::string::npos);
  EXPECT_NE(with([](auto& b) { b.struct_size = 8; }).find("smaller than an ABI 1.0 record"), std::string::npos);
  EXPECT_NE(with([](auto& b) { b.device_class = 42; }).find("'device_class' has unknown value 42"), std::string::npos);
  EXPECT_NE(with([](auto& b) { b.available = 7; }).find("'available'"), std::string::npos);
  EXPECT_NE(with([](auto& b) { b.torch_device = "cuda:x!"; }).find("not a LibTorch device"), std::string::npos);
  EXPECT_NE(with([](auto& b) { b.memory_total_bytes = -5; }).find("'memory_total_bytes' is negative"),
            std::string::npos);
  EXPECT_NE(with([](auto& b) { b.details_json = "[1,2"; }).find("'details_json'"), std::string::npos);
  EXPECT_NE(with([](auto& b) { b.index = -1; }).find("'index'"), std::string::npos);
  const std::string huge(10000, 'a');
  EXPECT_NE(with([&](auto& b) { b.vendor = huge.c_str(); }).find("longer than"), std::string::npos);
}

TEST(DeviceRecords, UnavailableWithoutReasonGetsOne) {
  mlh_device_record r = good_record();
  r.available = 0;
  EXPECT_EQ(devices_from_records("p", &r, 1)[0].unavailable_reason, "the plugin gave no reason");
}

TEST(DeviceRecords, NewerPluginsWithLargerRecordsAreReadByTheirStride) {
  // A plugin built against a later minor appends fields: records are larger than ours.
  struct Newer {
    mlh_device_record v1;
    int64_t appended_field;
  };
  Newer two[2] = {{good_record(), 1}, {good_record(), 2}};
  for (auto& n : two) n.v1.struct_size = sizeof(Newer);
  two[1].v1.index = 2;
  two[1].v1.torch_device = "cuda:2";
  std::vector<Device> d = devices_from_records("p", &two[0].v1, 2);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[1].id(), "cuda:2");
}

}  // namespace
}  // namespace mlhost
