#include <gtest/gtest.h>
#include <unistd.h>
#include <fstream>
#include <filesystem>

#include <chrono>
#include <cmath>
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
  // The statistics of known times (shuffled, as a busy machine's would come): exact.
  mlh::rt::BenchmarkOptions options;
  options.items_per_iteration = 12;
  const mlh::rt::BenchmarkResult r =
      mlh::rt::summarize_times("steps", {7, 1, 11, 3, 9, 5, 2, 10, 4, 8, 6}, options);
  EXPECT_EQ(r.iterations, 11);
  EXPECT_DOUBLE_EQ(r.median_ms, 6.0);
  EXPECT_DOUBLE_EQ(r.p10_ms, 2.0);
  EXPECT_DOUBLE_EQ(r.p90_ms, 10.0);
  EXPECT_DOUBLE_EQ(r.mean_ms, 6.0);
  EXPECT_NEAR(r.stddev_ms, std::sqrt(11.0), 1e-12);  // the sample standard deviation of 1..11
  EXPECT_DOUBLE_EQ(r.throughput, 12 / 0.006);
  // Between ranks: p10 of 1, 2, 3, 4 is at rank 0.3, i.e. 1.3.
  EXPECT_NEAR(mlh::rt::summarize_times("four", {4, 3, 2, 1}).p10_ms, 1.3, 1e-12);
  EXPECT_THROW(mlh::rt::summarize_times("none", {}), std::invalid_argument);

  // Timed: a sleep never ends early, so the order statistics are bounded below; how late a
  // loaded machine wakes a sleeper has no bound worth asserting.
  int64_t i = 0;
  options.warmup_iterations = 0;
  options.min_iterations = options.max_iterations = 11;
  const mlh::rt::BenchmarkResult timed = mlh::rt::run_benchmark("sleeps", [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(++i));
  }, options);
  EXPECT_EQ(timed.iterations, 11);
  EXPECT_GE(timed.p10_ms, 2.0);
  EXPECT_GE(timed.median_ms, 6.0);
  EXPECT_GE(timed.p90_ms, 10.0);
  EXPECT_LE(timed.p10_ms, timed.median_ms);
  EXPECT_LE(timed.median_ms, timed.p90_ms);
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

// MLH_PROFILE_DIR: after the timing, a few iterations under LibTorch's profiler, written as a
// Chrome trace named after the benchmark, with the body's operators in it.
TEST(Benchmark, ProfileDirGetsATraceOfTheBodysOperators) {
  const std::string dir = (std::filesystem::temp_directory_path() / ("mlh-profile-" + std::to_string(::getpid()))).string();
  ::setenv("MLH_PROFILE_DIR", dir.c_str(), 1);
  ::setenv("MLH_PROFILE_STEPS", "2", 1);
  const at::Tensor a = at::randn({64, 64});
  int calls = 0;
  mlh::rt::BenchmarkOptions o;
  o.warmup_iterations = 0;
  o.min_iterations = 3;
  o.min_seconds = 0;
  mlh::rt::run_benchmark("matmul_64", [&] { ++calls; (void)at::mm(a, a); }, o);
  ::unsetenv("MLH_PROFILE_DIR");
  ::unsetenv("MLH_PROFILE_STEPS");
  EXPECT_EQ(calls, 3 + 2) << "the timed iterations, then the profiled ones";
  std::ifstream in(dir + "/matmul_64.trace.json");
  ASSERT_TRUE(in) << dir + "/matmul_64.trace.json";
  const nlohmann::json trace = nlohmann::json::parse(in);
  int mm = 0;
  for (const auto& event : trace.is_array() ? trace : trace.value("traceEvents", nlohmann::json::array()))
    if (event.value("name", "") == "aten::mm") ++mm;
  EXPECT_EQ(mm, 2) << trace.dump().substr(0, 2000);
  std::filesystem::remove_all(dir);
}
