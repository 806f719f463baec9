// Runs a calibration (calibration.hpp): the algorithm's "calibrate" command in a fresh worker
// per candidate setting, each started with the environment the device plugin prepares for
// that plan (the allocator preloaded or tuned, the thread count), within a time bound, with a
// progress display. The search, each stage keeping the winner of the last:
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
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/calibration.hpp"
#include "plugins/manifest.hpp"
#include "probe/device.hpp"

namespace mlhost {

constexpr double kCalibrationMargin = 0.03;

struct CalibratorInputs {
  const PluginManifest* algorithm = nullptr;
  const PluginManifest* device_plugin = nullptr;
  const Device* device = nullptr;
  nlohmann::json plan;    // what the run would use without calibration
  nlohmann::json config;  // the algorithm's config for the run
  bool vary_allocator = true, vary_threads = true, vary_precision = true;
  const char* allocator_search_path = nullptr;  // MLH_ALLOCATOR_PATH
  double bound_seconds = 60;
};

// One run of the algorithm's calibrate command with `plan` (its "calibration" object says
// what to measure) in a fresh worker, killed at `deadline`: the reply (the run summary's
// "result"), or why there is none. Throws HostError when the user stopped it (Ctrl-C).
struct CalibrateOutcome {
  nlohmann::json result;
  std::string error;  // empty: it completed
  bool timed_out = false;
};
CalibrateOutcome run_calibrate_command(const CalibratorInputs& in, nlohmann::json plan,
                                       std::chrono::steady_clock::time_point deadline);

// The key a calibration of `algorithm` on `device` is cached under.
CalibrationKey calibration_key(const PluginManifest& algorithm, const Device& device);

// The calibration, or nothing when the plan's own setting could not be measured (`why` then
// says what went wrong): without it nothing can be shown faster. Throws HostError when the user stopped it (Ctrl-C).
std::optional<CalibrationResult> run_calibration(const CalibratorInputs& in, const CalibrationKey& key,
                                                 std::string& why);

}  // namespace mlhost
