#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include <mlh/runtime/benchmark.hpp>

namespace {

using namespace std::chrono_literals;

TEST(Benchmark, MedianOfASleepingBodyIsCloseToItsSleep) {
  int64_t calls = 0;
  mlh::rt::BenchmarkOptions options;
  options.warmup_iterations = 2;
  options.min_iterations = 10;
  options.min_seconds = 0;
  options.items_per_iteration = 32;
  options.unit = "samples";
  const mlh::rt::BenchmarkResult r = mlh::rt::run_benchmark("sleep", [&] {
    ++calls;
    std::this_thread::sleep_for(5ms);
  }, options);
  EXPECT_EQ(r.iterations, 10);
  EXPECT_EQ(calls, 12) << "warm-up iterations run but are not timed";
  EXPECT_GE(r.median_ms, 5.0);
  EXPECT_LT(r.median_ms, 5.0 + 3.0) << "allowing for a loaded machine's scheduling delay";
  EXPECT_LE(r.p10_ms, r.median_ms);
  EXPECT_LE(r.median_ms, r.p90_ms);
  EXPECT_GE(r.mean_ms, r.p10_ms);
  EXPECT_GE(r.stddev_ms, 0.0);
  EXPECT_DOUBLE_EQ(r.throughput, 32 / (r.median_ms / 1000.0));
}

TEST(Benchmark, PercentilesInterpolateBetweenRanks) {
  // Iteration i sleeps i ms (1..11): median 6, p10 2, p90 10.
  int64_t i = 0;
  mlh::rt::BenchmarkOptions options;
  options.warmup_iterations = 0;
  options.min_iterations = options.max_iterations = 11;
  const mlh::rt::BenchmarkResult r = mlh::rt::run_benchmark("steps", [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(++i));
  }, options);
  // A sleep never ends early, so the order statistics are bounded below exactly; above,
  // allow for a loaded machine's scheduling delay.
  EXPECT_GE(r.p10_ms, 2.0);
  EXPECT_GE(r.median_ms, 6.0);
  EXPECT_GE(r.p90_ms, 10.0);
  EXPECT_LT(r.p10_ms, 2.0 + 3.0);
  EXPECT_LT(r.median_ms, 6.0 + 3.0);
  EXPECT_LT(r.p90_ms, 10.0 + 3.0);
  EXPECT_LT(r.p10_ms, r.median_ms);
  EXPECT_LT(r.median_ms, r.p90_ms);
  EXPECT_NEAR(r.stddev_ms, 3.32, 1.0);  // of 1..11
}

TEST(Benchmark, IterationCountsHonourMinMaxAndMinSeconds) {
  mlh::rt::BenchmarkOptions options;
  options.warmup_iterations = 0;
  options.min_iterations = 3;
  options.max_iterations = 1000;
  options.min_seconds = 0.05;
  const auto sleep_1ms = [] { std::this_thread::sleep_for(1ms); };
  // min_seconds keeps it going past min_iterations: 50 ms of ~1 ms iterations.
  const mlh::rt::BenchmarkResult r = mlh::rt::run_benchmark("seconds", sleep_1ms, options);
  EXPECT_GT(r.iterations, 3);
  EXPECT_LE(r.iterations, 50);
  EXPECT_GE(r.mean_ms * static_cast<double>(r.iterations), 45.0) << "timed for about min_seconds";
  // max_iterations cuts min_seconds short.
  options.max_iterations = 5;
  EXPECT_EQ(mlh::rt::run_benchmark("max", sleep_1ms, options).iterations, 5);
  // min_iterations holds even when min_seconds is already met.
  options.min_seconds = 0;
  options.min_iterations = options.max_iterations = 4;
  EXPECT_EQ(mlh::rt::run_benchmark("min", sleep_1ms, options).iterations, 4);

  options.min_iterations = 0;
  EXPECT_THROW(mlh::rt::run_benchmark("bad", sleep_1ms, options), std::invalid_argument);
}

TEST(Benchmark, JsonHasEveryField) {
  mlh::rt::BenchmarkOptions options;
  options.min_seconds = 0;
  options.unit = "tokens";
  const mlh::rt::BenchmarkResult r = mlh::rt::run_benchmark("noop", [] {}, options);
  const nlohmann::json summary = mlh::rt::benchmarks_summary({r, r});
  ASSERT_TRUE(summary["benchmarks"].is_array());
  ASSERT_EQ(summary["benchmarks"].size(), 2u);
  const nlohmann::json& j = summary["benchmarks"][0];
  for (const char* key : {"name", "iterations", "median_ms", "p10_ms", "p90_ms", "mean_ms",
                          "stddev_ms", "items_per_iteration", "throughput", "unit"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["name"], "noop");
  EXPECT_EQ(j["unit"], "tokens");
  EXPECT_EQ(j["iterations"], 10);
}

}  // namespace
