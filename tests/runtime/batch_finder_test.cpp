// The batch size finder (batch_finder.hpp) against the CPU memory cap: the batch it keeps fits
// and the next doubling does not; it keeps the smaller batch when larger ones stop paying; it
// stops at its time bound; a bad plan field is named.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include <mlh/runtime/batch_finder.hpp>
#include <mlh/runtime/memory_limit.hpp>
#include <mlh/runtime/oom_backoff.hpp>

namespace {

constexpr int64_t kKiB = 1 << 10, kMiB = 1 << 20;

struct LiftCapAfterwards {
  ~LiftCapAfterwards() { mlh::rt::set_cpu_memory_limit(std::nullopt); }
};

// A "training step" whose activations take 128 KiB per row; its throughput grows with the batch.
double step_with_rows(int64_t batch) {
  const at::Tensor activations = at::ones({batch, 128 * kKiB / 4});
  return static_cast<double>(activations.size(0)) * 1000.0;
}

TEST(BatchFinder, KeepsABatchThatFitsWhoseDoublingDoesNot) {
  LiftCapAfterwards lift;
  mlh::rt::set_cpu_memory_limit(std::nullopt);
  const int64_t limit = mlh::rt::cpu_memory_in_use() + 10 * kMiB;
  mlh::rt::set_cpu_memory_limit(limit);
  mlh::rt::BatchSearchOptions options;
  options.memory_limit_bytes = limit;
  const mlh::rt::BatchSearchResult r = mlh::rt::find_batch_size(step_with_rows, at::kCPU, options);

  ASSERT_GT(r.batch, 0) << r.reason;
  EXPECT_TRUE(r.complete);
  EXPECT_NO_THROW(step_with_rows(r.batch));
  EXPECT_THROW(step_with_rows(2 * r.batch), c10::OutOfMemoryError) << "the next doubling fits: the search stopped short";
  // 10 MiB at 128 KiB a row, less the headroom: 64 fits, 72 not within the 10% margin.
  EXPECT_GE(r.batch, 56);
  EXPECT_LE(r.batch, 72);
  bool doubled_then_searched = false;
  for (const auto& t : r.trials) doubled_then_searched |= t.batch == 128 && !t.fits && t.why == "out of memory";
  EXPECT_TRUE(doubled_then_searched) << r.to_json().dump();
  EXPECT_NE(r.reason.find(std::to_string(r.batch) + " fits"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("does not"), std::string::npos) << r.reason;
  for (const auto& t : r.trials)
    if (t.fits) EXPECT_LE(t.peak_bytes, static_cast<int64_t>(0.9 * static_cast<double>(limit))) << t.batch;
}

TEST(BatchFinder, KeepsTheSmallerBatchWhenLargerOnesStopPaying) {
  const auto saturating = [](int64_t batch) { return static_cast<double>(std::min<int64_t>(batch, 8)) * 100.0; };
  mlh::rt::BatchSearchOptions options;
  const mlh::rt::BatchSearchResult r = mlh::rt::find_batch_size(saturating, at::kCPU, options);
  EXPECT_EQ(r.batch, 8);
  EXPECT_NE(r.reason.find("larger batches stop paying (16 ran at"), std::string::npos) << r.reason;
}

TEST(BatchFinder, StopsAtTheLargestAllowed) {
  mlh::rt::BatchSearchOptions options;
  options.start = 4;
  options.max = 24;
  const mlh::rt::BatchSearchResult r =
      mlh::rt::find_batch_size([](int64_t batch) { return static_cast<double>(batch); }, at::kCPU, options);
  EXPECT_EQ(r.batch, 24);
  EXPECT_EQ(r.trials.front().batch, 4);
  EXPECT_NE(r.reason.find("24 is the largest allowed"), std::string::npos) << r.reason;
}

TEST(BatchFinder, StopsAtItsTimeBoundWithWhatItTried) {
  mlh::rt::BatchSearchOptions options;
  options.seconds = 0.2;
  const auto start = std::chrono::steady_clock::now();
  const mlh::rt::BatchSearchResult r = mlh::rt::find_batch_size(
      [](int64_t batch) {
        std::this_thread::sleep_for(std::chrono::milliseconds(60));
        return static_cast<double>(batch);
      },
      at::kCPU, options);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_FALSE(r.complete);
  EXPECT_GE(r.batch, 2);
  EXPECT_NE(r.reason.find("the time bound stopped the search"), std::string::npos) << r.reason;
}

TEST(BatchFinder, SaysSoWhenNotEvenABatchOfOneFits) {
  mlh::rt::BatchSearchOptions options;
  options.start = 4;
  const mlh::rt::BatchSearchResult r = mlh::rt::find_batch_size(
      [](int64_t) -> double { throw c10::OutOfMemoryError({"f", "file", 1}, "CUDA out of memory"); }, at::kCPU, options);
  EXPECT_EQ(r.batch, 0);
  ASSERT_EQ(r.trials.size(), 3u) << r.to_json().dump() << ": 4, 2 and 1";
  EXPECT_EQ(r.reason, "even a batch of 1 does not fit (out of memory)");
}

// A start above what fits (a rule's batch for a larger card): it halves down, then bisects up
// between the batch that fitted and the one that did not. Seen on an H100 under a 5% memory
// fraction, where the cuda rule's start of 256 did not fit and the search gave up.
TEST(BatchFinder, HalvesDownFromAStartThatDoesNotFit) {
  mlh::rt::BatchSearchOptions options;
  options.start = 256;
  const mlh::rt::BatchSearchResult r = mlh::rt::find_batch_size(
      [](int64_t batch) -> double {
        if (batch > 40) throw c10::OutOfMemoryError({"f", "file", 1}, "CUDA out of memory");
        return static_cast<double>(batch);
      },
      at::kCPU, options);
  EXPECT_EQ(r.trials.front().batch, 256);
  EXPECT_GE(r.batch, 32) << r.to_json().dump();
  EXPECT_LE(r.batch, 40) << r.to_json().dump();
  EXPECT_NE(r.reason.find("does not (out of memory)"), std::string::npos) << r.reason;
}

TEST(BatchFinder, OtherErrorsPropagate) {
  EXPECT_THROW(mlh::rt::find_batch_size([](int64_t) -> double { throw std::runtime_error("bad data"); }, at::kCPU, {}),
               std::runtime_error);
}

TEST(BatchFinder, OptionsComeFromThePlanAndBadOnesAreNamed) {
  const auto o = mlh::rt::BatchSearchOptions::from_plan(R"({"calibration": {"batch_search": {"start": 8, "max": 512, "seconds": 30}}})");
  EXPECT_EQ(o.start, 8);
  EXPECT_EQ(o.max, 512);
  EXPECT_EQ(o.seconds, 30);
  const auto defaults = mlh::rt::BatchSearchOptions::from_plan(R"({"calibration": {"batch_search": {}}})");
  EXPECT_EQ(defaults.start, 1);
  const std::pair<const char*, const char*> bad[] = {
      {R"({"calibration": {"batch_search": {"start": 0}}})", "calibration.batch_search.start"},
      {R"({"calibration": {"batch_search": {"seconds": -1}}})", "calibration.batch_search.seconds"},
      {R"({"calibration": {"batch_search": {"start": 64, "max": 8}}})", "calibration.batch_search.max"}};
  for (const auto& [plan, field] : bad) {
    try {
      mlh::rt::BatchSearchOptions::from_plan(plan);
      FAIL() << plan << " was accepted";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  }
}

}  // namespace
