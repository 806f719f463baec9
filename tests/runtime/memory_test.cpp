#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <mlh/runtime/memory.hpp>

namespace {

TEST(MemoryStats, RssIsPositiveAndGrowsWithABigTensor) {
  const mlh::rt::MemoryStats before = mlh::rt::memory_stats(at::kCPU);
  EXPECT_GT(before.rss, 0);
  EXPECT_FALSE(before.allocated.has_value()) << "no caching-allocator stats on the CPU";
  // 256 MiB, written so that the pages are resident.
  const at::Tensor big = at::ones({64, 1024, 1024}, at::kFloat);
  const mlh::rt::MemoryStats after = mlh::rt::memory_stats(at::kCPU);
  EXPECT_GT(after.rss - before.rss, 200LL << 20);
  EXPECT_EQ(big.sum().item<double>(), 64.0 * 1024 * 1024);
}

TEST(MemoryStats, HostFreeFractionIsAFraction) {
  const std::optional<double> free = mlh::rt::free_memory_fraction(at::kCPU);
  ASSERT_TRUE(free.has_value());
  EXPECT_GT(*free, 0.0);
  EXPECT_LE(*free, 1.0);
}

struct Recorded {
  std::vector<std::string> metrics;
  std::vector<std::string> warnings;
};

mlh::rt::MemoryMonitor monitor(Recorded& out, mlh::rt::MemoryMonitorOptions options) {
  return mlh::rt::MemoryMonitor(
      at::kCPU, [&out](const std::string& name, double, int64_t) { out.metrics.push_back(name); },
      [&out](const std::string& message) { out.warnings.push_back(message); }, std::move(options));
}

TEST(MemoryMonitor, RecordsRssAtTheIntervalAndWarnsOnceWhenMemoryRunsLow) {
  double now = 0;
  double free = 0.5;
  Recorded out;
  mlh::rt::MemoryMonitorOptions options;
  options.interval_s = 5;
  options.clock = [&] { return now; };
  options.free_fraction = [&] { return std::optional<double>(free); };
  mlh::rt::MemoryMonitor memory = monitor(out, options);

  now = 4;
  memory.step();
  EXPECT_TRUE(out.metrics.empty()) << "before the interval";
  now = 5;
  memory.step();
  EXPECT_EQ(out.metrics, std::vector<std::string>{"memory/rss_bytes"});
  EXPECT_TRUE(out.warnings.empty());

  free = 0.05;
  for (int i = 0; i < 3; ++i) {
    now += 5;
    memory.step();
  }
  EXPECT_EQ(out.metrics.size(), 4u);
  ASSERT_EQ(out.warnings.size(), 1u) << "one warning, not one per check";
  EXPECT_NE(out.warnings[0].find("5.0% free"), std::string::npos) << out.warnings[0];
}

TEST(MemoryMonitor, EmptiesTheCacheEveryEmptyCacheSteps) {
  int emptied = 0;
  Recorded out;
  mlh::rt::MemoryMonitorOptions options;
  options.empty_cache_steps = 3;
  options.empty_cache = [&] { ++emptied; };
  mlh::rt::MemoryMonitor memory = monitor(out, options);
  for (int i = 0; i < 10; ++i) memory.step();
  EXPECT_EQ(emptied, 3);

  int never = 0;
  options.empty_cache_steps = 0;
  options.empty_cache = [&] { ++never; };
  mlh::rt::MemoryMonitor off = monitor(out, options);
  for (int i = 0; i < 10; ++i) off.step();
  EXPECT_EQ(never, 0);
}

TEST(MemoryMonitor, EmptyingTheCacheOnTheCpuDoesNothing) {
  EXPECT_NO_THROW(mlh::rt::empty_device_cache(at::kCPU));
}

}  // namespace
