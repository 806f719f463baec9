// A benchmark harness for an algorithm's benchmark command: warm-up, timed iterations
// synchronised with the device, median and spread, throughput. The algorithm reports its
// results in its run summary (benchmarks_summary); `host --benchmark` prints them.
//
//   mlh::rt::BenchmarkOptions options;
//   options.items_per_iteration = batch_size;
//   options.unit = "samples";
//   options.device = device;
//   auto step = mlh::rt::run_benchmark("train_step", [&] { train_step(batch); }, options);
//   ctx.summary(mlh::rt::benchmarks_summary({step}).dump());
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

namespace mlh::rt {

struct BenchmarkOptions {
  int64_t warmup_iterations = 3;  // untimed: first-call allocation, cuDNN autotuning, caches
  int64_t min_iterations = 10;
  int64_t max_iterations = 1000;
  double min_seconds = 1.0;         // keep timing until both this and min_iterations are met
  double items_per_iteration = 1;   // e.g. the batch size
  std::string unit = "items";       // what an item is, e.g. "samples", "tokens"
  at::Device device = at::kCPU;     // synchronised after every iteration
};

struct BenchmarkResult {
  std::string name;
  int64_t iterations = 0;  // timed ones
  double median_ms = 0, p10_ms = 0, p90_ms = 0, mean_ms = 0, stddev_ms = 0;
  double items_per_iteration = 1;
  double throughput = 0;  // items per second, from the median
  std::string unit;       // of an item; throughput is in unit/s
  // CUDA: the most device memory tensors held during the timed iterations (the caching
  // allocator's peak, weights included); unknown elsewhere. JSON null when unknown.
  std::optional<int64_t> peak_memory_bytes;

  // An object with every field under its member name.
  nlohmann::json to_json() const;
};

// Waits until the work queued on `device` is done, where its trait says it is an accelerator
// (mlh/device_traits.hpp: CUDA, MPS, any backend the table does not know): its kernels launch
// asynchronously, and a step timed without this times only their launches. Nothing on the CPU.
void synchronize(at::Device device);

// Runs `body` options.warmup_iterations times untimed, then times it until at least
// min_iterations and min_seconds are reached, or max_iterations. Each iteration waits for
// the device to finish (synchronize), so asynchronous kernels are counted where they run.
BenchmarkResult run_benchmark(const std::string& name, const std::function<void()>& body,
                              const BenchmarkOptions& options = {});

// The result's statistics from the iterations' times (milliseconds, in the order measured):
// what run_benchmark reports, apart from the clock (and so testable exactly).
BenchmarkResult summarize_times(const std::string& name, std::vector<double> times_ms,
                                const BenchmarkOptions& options = {});

// {"benchmarks": [result.to_json(), ...]}: the run summary of a benchmark command.
nlohmann::json benchmarks_summary(const std::vector<BenchmarkResult>& results);

}  // namespace mlh::rt
