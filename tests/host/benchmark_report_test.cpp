#include "run/benchmark_report.hpp"

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

TEST(BenchmarkReport, PeakMemoryColumnOnlyWhenSomeResultKnowsIt) {
  json cpu_row = {{"name", "step"}, {"iterations", 5}, {"median_ms", 1.0}, {"throughput", 10.0},
                  {"unit", "samples"}, {"peak_memory_bytes", nullptr}};
  EXPECT_EQ(benchmark_table({{"benchmarks", json::array({cpu_row})}}, kPlan).find("peak MiB"), std::string::npos);
  json gpu_row = cpu_row;
  gpu_row["name"] = "gpu_step";
  gpu_row["peak_memory_bytes"] = 3 * 1024 * 1024;
  const std::string table = benchmark_table({{"benchmarks", json::array({cpu_row, gpu_row})}}, kPlan);
  EXPECT_NE(table.find("peak MiB"), std::string::npos) << table;
  const size_t gpu_line = table.find("gpu_step");
  ASSERT_NE(gpu_line, std::string::npos);
  EXPECT_NE(table.find(" 3\n", gpu_line), std::string::npos) << table;
  EXPECT_NE(table.find("-\n"), std::string::npos) << "the CPU row's unknown peak shows as '-': " << table;
}

TEST(BenchmarkReport, NamesTheThreadsAndAllocatorItRanWithAndPrintsTheNotes) {
  json plan = kPlan;
  plan["allocator"] = {{"name", "jemalloc"}};
  const json row = {{"name", "step"}, {"iterations", 5}, {"median_ms", 1.0}, {"throughput", 10.0}, {"unit", "samples"}};
  const json result = {{"benchmarks", json::array({row})}, {"notes", {"conv training at 60% of the matmul"}}};
  std::string table = benchmark_table(result, plan);
  EXPECT_NE(table.find("precision fp32, 2 intra-op threads, allocator jemalloc\n"), std::string::npos) << table;
  EXPECT_NE(table.find("  conv training at 60% of the matmul\n"), std::string::npos) << table;
  // What the worker reported wins over the plan (they differ when a library failed to load).
  table = benchmark_table(result, plan, "glibc");
  EXPECT_NE(table.find("allocator glibc\n"), std::string::npos) << table;
  const json j = benchmark_json(result, plan, "jemalloc");
  EXPECT_EQ(j["allocator"], "jemalloc");
  EXPECT_EQ(j["threads"]["intra_op"], 2);
  EXPECT_EQ(j["notes"][0], "conv training at 60% of the matmul");
}

TEST(BenchmarkReport, NoResultsIsAnError) {
  EXPECT_THROW(benchmark_table(json::object(), kPlan), std::runtime_error);
  EXPECT_THROW(benchmark_json(json(nullptr), kPlan), std::runtime_error);
  EXPECT_THROW(benchmark_table({{"benchmarks", 3}}, kPlan), std::runtime_error);
}

}  // namespace
}  // namespace mlhost
