#include "benchmark_report.hpp"

#include <gtest/gtest.h>

namespace mlhost {
namespace {

using nlohmann::json;

const json kPlan = {{"device", "cpu:0"}, {"device_name", "AMD EPYC"}, {"precision", "fp32"}, {"threads", {{"intra_op", 2}}}};

TEST(BenchmarkReport, TableHasARowPerResult) {
  json row = {{"name", "train_step"}, {"iterations", 50}, {"median_ms", 2.5}, {"p10_ms", 2.25},
              {"p90_ms", 3.0},        {"throughput", 12800.0}, {"unit", "samples"}};
  const json result = {{"benchmarks", json::array({row})}};
  const std::string table = benchmark_table(result, kPlan);
  EXPECT_NE(table.find("Benchmarks on cpu:0 (AMD EPYC), precision fp32"), std::string::npos) << table;
  EXPECT_NE(table.find("train_step"), std::string::npos) << table;
  EXPECT_NE(table.find("2.500"), std::string::npos) << table;
  EXPECT_NE(table.find("12800.0 samples/s"), std::string::npos) << table;

  const json j = benchmark_json(result, kPlan);
  EXPECT_EQ(j["device"], "cpu:0");
  EXPECT_EQ(j["benchmarks"][0]["name"], "train_step");
}

TEST(BenchmarkReport, NoResultsIsAnError) {
  EXPECT_THROW(benchmark_table(json::object(), kPlan), std::runtime_error);
  EXPECT_THROW(benchmark_json(json(nullptr), kPlan), std::runtime_error);
  EXPECT_THROW(benchmark_table({{"benchmarks", 3}}, kPlan), std::runtime_error);
}

}  // namespace
}  // namespace mlhost
