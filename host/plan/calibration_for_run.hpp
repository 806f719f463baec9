// The calibration a run's plan uses (docs/plan.md, "Calibration"): the one cached for this
// machine and algorithm, one measured now, or none, and a line saying which.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/cli.hpp"
#include "plan/calibration.hpp"
#include "plan/plan.hpp"
#include "plugins/discovery.hpp"
#include "plugins/manifest.hpp"
#include "probe/device.hpp"

namespace mlhost {

// Whether setting a run up may calibrate.
enum class Calibration {
  kCachedOnly,  // use a cached calibration, never measure (--print-plan, --no-calibrate, distributed runs)
  kIfMissing,   // measure when there is none for this machine and algorithm (a run)
  kAlways,      // measure again, replacing the cached one (--calibrate)
};

// What the run is set up with so far: the plan and config without calibration are what a
// calibration starts from; `plan_inputs` says what the user fixed (not varied).
struct RunCalibrationInputs {
  const CliOptions& options;
  const nlohmann::json& description;
  const PluginManifest& algorithm;
  const Device& device;
  const Discovery& discovery;
  const nlohmann::json& plan;
  const nlohmann::json& config;
  const PlanInputs& plan_inputs;
};

// The calibration for the plan, and in `status` what became of it ("measured now in 18 s,
// cached in FILE", "cached in FILE (measured ...)", "not calibrated: <why_cached_only>",
// "not calibrated: <what failed>"). A cache file that cannot be trusted is a HostError
// (exit status 2) naming it, except with kAlways, which replaces it with a warning.
std::optional<CalibrationResult> calibration_for_run(const RunCalibrationInputs& in, Calibration mode,
                                                     const std::string& why_cached_only, std::string& status);

}  // namespace mlhost
