#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <dirent.h>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>

#include <mlh/runtime/device_transfer.hpp>
#include <mlh/runtime/prefetcher.hpp>

namespace {

using mlh::rt::Prefetcher;
using namespace std::chrono_literals;

int thread_count() {
  int n = 0;
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return -1;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') ++n;
  }
  closedir(dir);
  return n;
}

// Indices 0..n-1 with a random delay of up to 3 ms each, so that workers finish out of order.
Prefetcher<int64_t>::Producer jittery(int64_t n) {
  return [n](int64_t i) -> std::optional<int64_t> {
    thread_local std::mt19937 rng(std::random_device{}());
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 3000));
    if (i >= n) return std::nullopt;
    return i * 10;
  };
}

class PrefetcherWorkers : public ::testing::TestWithParam<int> {};

TEST_P(PrefetcherWorkers, KeepsIndexOrderAndEndsAtTheEndOfData) {
  const int workers = GetParam();
  Prefetcher<int64_t> batches(jittery(40), mlh::rt::prefetch_depth(2, workers), workers);
  for (int64_t i = 0; i < 40; ++i) {
    const std::optional<int64_t> b = batches.next();
    ASSERT_TRUE(b.has_value()) << i;
    EXPECT_EQ(*b, i * 10);
  }
  EXPECT_FALSE(batches.next().has_value());
  EXPECT_FALSE(batches.next().has_value()) << "the end stays the end";
}

TEST_P(PrefetcherWorkers, RethrowsAProducerErrorAtItsIndex) {
  const int workers = GetParam();
  Prefetcher<int64_t> batches(
      [](int64_t i) -> std::optional<int64_t> {
        if (i == 5) throw std::runtime_error("bad record 5");
        return i < 8 ? std::optional<int64_t>(i) : std::nullopt;
      },
      4, workers);
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(batches.next(), i);
  try {
    batches.next();
    FAIL() << "expected the producer's error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "bad record 5");
  }
  EXPECT_EQ(batches.next(), 6) << "the next call goes on after the failed index";
  EXPECT_EQ(batches.next(), 7);
  EXPECT_FALSE(batches.next().has_value());
}

INSTANTIATE_TEST_SUITE_P(Workers, PrefetcherWorkers, ::testing::Values(0, 1, 3),
                         [](const auto& info) { return std::to_string(info.param) + "workers"; });

TEST(Prefetcher, DestroyedEarlyStopsEveryWorkerPromptly) {
  const int before = thread_count();
  std::chrono::steady_clock::duration teardown{};
  {
    // Endless data: workers fill the queue, then block waiting for room.
    Prefetcher<std::string> batches(
        [](int64_t i) -> std::optional<std::string> {
          std::this_thread::sleep_for(1ms);
          return std::to_string(i);
        },
        4, 3);
    EXPECT_EQ(batches.next(), "0");
    EXPECT_EQ(batches.next(), "1");
    std::this_thread::sleep_for(50ms);  // let the workers hit the bound
    EXPECT_EQ(thread_count(), before + 3);
    const auto t0 = std::chrono::steady_clock::now();
    batches.stop();
    teardown = std::chrono::steady_clock::now() - t0;
    EXPECT_FALSE(batches.next().has_value()) << "nothing after stop()";
  }
  EXPECT_LT(teardown, 500ms);
  // A joined thread has finished, but the kernel may list it in /proc a moment longer.
  for (int i = 0; i < 100 && thread_count() != before; ++i) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(thread_count(), before);
}

TEST(Prefetcher, DepthBoundsHowFarAheadWorkersRun) {
  std::atomic<int64_t> max_index{-1};
  Prefetcher<int64_t> batches(
      [&](int64_t i) -> std::optional<int64_t> {
        int64_t seen = max_index.load();
        while (i > seen && !max_index.compare_exchange_weak(seen, i)) {
        }
        return i;
      },
      5, 3);
  std::this_thread::sleep_for(100ms);  // the consumer pauses before taking anything
  EXPECT_EQ(max_index.load(), 4) << "at most depth batches ahead of the consumer";
  EXPECT_EQ(batches.next(), 0);
  EXPECT_EQ(batches.next(), 1);
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(max_index.load(), 6) << "two taken, two more produced";
}

TEST(Prefetcher, RejectsABadConfiguration) {
  auto producer = [](int64_t) -> std::optional<int> { return std::nullopt; };
  EXPECT_THROW(Prefetcher<int>(producer, 0, 1), std::invalid_argument);
  EXPECT_THROW(Prefetcher<int>(producer, 1, -1), std::invalid_argument);
}

TEST(Prefetcher, DepthFollowsThePlan) {
  EXPECT_EQ(mlh::rt::prefetch_depth(2, 0), 2);
  EXPECT_EQ(mlh::rt::prefetch_depth(2, 4), 8);
}

TEST(DeviceTransfer, IsANoOpOnTheCpu) {
  const at::Tensor x = at::arange(6);
  const at::Tensor y = mlh::rt::to_device(x, at::kCPU, /*pinned=*/true);
  EXPECT_TRUE(y.is_same(x));
  const auto pair = mlh::rt::to_device(std::make_tuple(x, x + 1), at::kCPU, true);
  EXPECT_TRUE(std::get<0>(pair).is_same(x));
  EXPECT_EQ(std::get<1>(pair)[0].item<int64_t>(), 1);
  const std::vector<at::Tensor> many = mlh::rt::to_device(std::vector<at::Tensor>{x, x}, at::kCPU, true);
  ASSERT_EQ(many.size(), 2u);
  EXPECT_TRUE(many[1].is_same(x));
}

}  // namespace
