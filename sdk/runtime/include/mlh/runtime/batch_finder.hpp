// The largest batch that fits, found by trying real training steps (`host --batch-size auto`;
// Lightning's BatchSizeFinder, Accelerate's find_executable_batch_size): doubling from
// `start` while a batch fits, then a binary search between the last batch that fitted and
// the first that did not. A batch fits when its steps run without an out-of-memory error and
// their peak memory stays under (1 - headroom) of the memory limit, so the batch kept leaves
// that much for what varies during a run (longer inputs, fragmentation). Where doubling stops
// paying (throughput up by less than min_gain), the search keeps the smaller batch and says
// so. The binary search stops within an eighth of the answer. Bounded in time: what was
// tried by then decides.
//
// An algorithm's calibrate command runs it when the plan asks (plan.calibration.batch_search,
// see calibration.hpp) and replies {"batch_search": result.to_json()}.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

namespace mlh::rt {

struct RuntimePlan;

struct BatchSearchOptions {
  int64_t start = 1;                          // the first batch tried
  int64_t max = int64_t{1} << 20;             // never more than this (e.g. the dataset's size)
  double headroom = 0.1;                      // of the memory limit, left free by the batch kept
  double min_gain = 0.05;                     // doubling must raise throughput by this much
  double seconds = 60;                        // the time bound
  std::optional<int64_t> memory_limit_bytes;  // none: only out-of-memory errors say "does not fit"
  // From the plan's "calibration.batch_search": {"start", "max", "seconds"} (each optional).
  // A bad value is an mlh::Error naming the field.
  static BatchSearchOptions from_plan(const std::string& plan_json);
};

struct BatchTrial {
  int64_t batch = 0;
  bool fits = false;
  double throughput = 0;   // items per second, when it ran
  int64_t peak_bytes = 0;  // the most memory its steps held as the cap counts it (capped_memory_peak; 0 when unknown)
  std::string why;         // why it does not fit
};

struct BatchSearchResult {
  int64_t batch = 0;   // the batch to train with; 0 when not even `start` fitted
  std::string reason;  // "1024 does not fit (out of memory); 512 fits, peak 3.1 of 4.0 GiB"
  std::vector<BatchTrial> trials;  // in the order tried
  bool complete = true;            // false when the time bound cut it short
  nlohmann::json to_json() const;
};

// Runs real training steps at a batch and returns their throughput (items per second); an
// out-of-memory error (oom_backoff.hpp's is_out_of_memory) means the batch does not fit.
using BatchTrialFn = std::function<double(int64_t batch)>;

BatchSearchResult find_batch_size(const BatchTrialFn& trial, c10::Device device, const BatchSearchOptions& options);

// The memory the plan lets a run use on its device: the CPU cap (memory_limit_bytes), or
// memory_fraction of a CUDA device's memory; nothing when the plan sets none.
std::optional<int64_t> planned_memory_limit(const RuntimePlan& plan);

}  // namespace mlh::rt
