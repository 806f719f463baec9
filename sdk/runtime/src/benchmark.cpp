// Benchmark harness (see benchmark.hpp).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include <cstdlib>
#include <filesystem>

#include <torch/csrc/autograd/profiler_legacy.h>

#include <mlh/runtime/benchmark.hpp>
#include <mlh/runtime/memory.hpp>

#include <mlh/device_traits.hpp>

#include "backends/backend.hpp"

namespace mlh::rt {

void synchronize(at::Device device) {
  if (device_traits(device.str()).accelerator) backends::of(device).synchronize(device);
}

namespace {

// Linear interpolation between the closest ranks (NumPy's default), `sorted` not empty.
double percentile(const std::vector<double>& sorted, double p) {
  const double rank = p * static_cast<double>(sorted.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(rank));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (rank - static_cast<double>(below)) * (sorted[above] - sorted[below]);
}

// MLH_PROFILE_DIR=DIR: a few more iterations (MLH_PROFILE_STEPS, 3) under LibTorch's
// profiler, its operators' times as a Chrome trace in DIR/<benchmark>.trace.json
// (bench/profile_summary.py totals them). The profiler times operators on the host: on a GPU,
// run with CUDA_LAUNCH_BLOCKING=1 so that each operator's time includes its kernels.
void profile_if_asked(const std::string& name, const std::function<void()>& body, at::Device device) {
  const char* dir = std::getenv("MLH_PROFILE_DIR");
  if (!dir || !*dir) return;
  const char* steps_text = std::getenv("MLH_PROFILE_STEPS");
  const int steps = steps_text && std::atoi(steps_text) > 0 ? std::atoi(steps_text) : 3;
  std::filesystem::create_directories(dir);
  const std::string path = std::string(dir) + "/" + name + ".trace.json";
  torch::autograd::profiler::RecordProfile profile(path);
  for (int i = 0; i < steps; ++i) {
    body();
    synchronize(device);
  }
}

}  // namespace

nlohmann::json BenchmarkResult::to_json() const {
  return {{"name", name},           {"iterations", iterations},
          {"median_ms", median_ms}, {"p10_ms", p10_ms},
          {"p90_ms", p90_ms},       {"mean_ms", mean_ms},
          {"stddev_ms", stddev_ms}, {"items_per_iteration", items_per_iteration},
          {"throughput", throughput}, {"unit", unit},
          {"peak_memory_bytes", peak_memory_bytes ? nlohmann::json(*peak_memory_bytes) : nlohmann::json(nullptr)}};
}

BenchmarkResult run_benchmark(const std::string& name, const std::function<void()>& body,
                              const BenchmarkOptions& options) {
  if (options.warmup_iterations < 0 || options.min_iterations < 1 ||
      options.max_iterations < options.min_iterations) {
    throw std::invalid_argument("benchmark " + name +
                                ": needs warmup >= 0 and 1 <= min_iterations <= max_iterations");
  }
  using clock = std::chrono::steady_clock;
  for (int64_t i = 0; i < options.warmup_iterations; ++i) {
    body();
    synchronize(options.device);
  }

  reset_peak_memory(options.device);
  std::vector<double> times_ms;
  const clock::time_point start = clock::now();
  auto elapsed_s = [&] { return std::chrono::duration<double>(clock::now() - start).count(); };
  while (static_cast<int64_t>(times_ms.size()) < options.max_iterations &&
         (static_cast<int64_t>(times_ms.size()) < options.min_iterations ||
          elapsed_s() < options.min_seconds)) {
    const clock::time_point t0 = clock::now();
    body();
    synchronize(options.device);
    times_ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - t0).count());
  }
  BenchmarkResult result = summarize_times(name, std::move(times_ms), options);
  result.peak_memory_bytes = memory_stats(options.device).peak;
  profile_if_asked(name, body, options.device);
  return result;
}

BenchmarkResult summarize_times(const std::string& name, std::vector<double> times_ms, const BenchmarkOptions& options) {
  if (times_ms.empty()) throw std::invalid_argument("benchmark " + name + ": no timed iterations");
  BenchmarkResult result;
  result.name = name;
  result.iterations = static_cast<int64_t>(times_ms.size());
  result.items_per_iteration = options.items_per_iteration;
  result.unit = options.unit;
  const double n = static_cast<double>(times_ms.size());
  result.mean_ms = std::accumulate(times_ms.begin(), times_ms.end(), 0.0) / n;
  double squares = 0;
  for (double t : times_ms) squares += (t - result.mean_ms) * (t - result.mean_ms);
  result.stddev_ms = times_ms.size() > 1 ? std::sqrt(squares / (n - 1)) : 0.0;  // sample
  std::sort(times_ms.begin(), times_ms.end());
  result.median_ms = percentile(times_ms, 0.5);
  result.p10_ms = percentile(times_ms, 0.1);
  result.p90_ms = percentile(times_ms, 0.9);
  // The median resists outliers (a page fault, another process); a body too fast for the
  // clock to resolve has no meaningful rate, and JSON has no infinity.
  result.throughput = result.median_ms > 0 ? options.items_per_iteration / (result.median_ms / 1000.0) : 0.0;
  return result;
}

nlohmann::json benchmarks_summary(const std::vector<BenchmarkResult>& results) {
  nlohmann::json list = nlohmann::json::array();
  for (const BenchmarkResult& r : results) list.push_back(r.to_json());
  return {{"benchmarks", list}};
}

}  // namespace mlh::rt
