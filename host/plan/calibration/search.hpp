// The calibration search (docs/plan.md, "Calibration"): the algorithm's "calibrate" command
// run once per candidate setting, each in a fresh worker started with that candidate's plan
// (the allocator preloaded or tuned, the thread count), within a time bound. The search,
// each stage keeping the winner of the last:
//   1. allocator: the plan's own, glibc's defaults (the reference the figures are compared
//      with), then glibc-tuned, jemalloc and tcmalloc where installed;
//   2. intra-op threads: 1, 2, 4, ... and every usable core (CPUs only);
//   3. precision: bf16 against fp32 where the CPU runs bf16 fast (AVX512-BF16, AMX), kept
//      only when the algorithm's quality check for it passes.
// A candidate wins only when at least kCalibrationMargin faster than the setting the run
// would have had without calibration: a slower setting is never chosen. What the user fixed
// (command line, settings file) is not varied.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "plan/calibration/result.hpp"
#include "plan/plan_types.hpp"

namespace mlhost {

constexpr double kCalibrationMargin = 0.03;

// One run of the calibrate command with a candidate plan, killed at the deadline.
using CalibrateCommand =
    std::function<CalibrateOutcome(const nlohmann::json& plan, std::chrono::steady_clock::time_point deadline)>;

struct CalibrationSearch {
  std::string algorithm;  // its name, for messages
  const Device* device = nullptr;
  nlohmann::json plan;    // what the run would use without calibration
  bool vary_allocator = true, vary_threads = true, vary_precision = true;
  std::optional<std::string> allocator_search_path;  // MLH_ALLOCATOR_PATH
  bool allocator_search_system = true;
  double bound_seconds = 60;
  CalibrateCommand calibrate;
  // How far it is: runs done of those planned (done == planned once at the end); may be empty.
  std::function<void(int done, int planned)> progress;
};

struct CalibrationSearchResult {
  std::optional<CalibrationResult> calibration;
  // Without a calibration, why: without the plan's own setting measured nothing can be
  // shown faster.
  std::string failure;
};

// Throws HostError when the user stopped it (Ctrl-C).
CalibrationSearchResult search_calibration(const CalibrationSearch& search, const CalibrationKey& key);

}  // namespace mlhost
