// The calibration a plan uses (docs/running.md, "Calibration"): the one cached for this
// machine, algorithm and workload, one measured now, or none, and a line saying which. A step
// of plan_run().
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "plan/calibration/result.hpp"
#include "plan/calibration/search.hpp"
#include "plan/plan_types.hpp"

namespace mlhost {

struct PlanCalibration {
  std::optional<CalibrationResult> result;
  // "measured now in 18 s, cached in FILE", "cached in FILE (measured ...)",
  // "not calibrated: <why_cached_only>", "not calibrated: <what failed>"
  std::string status;
};

// `plan` and `config`: the run's without calibration (what a calibration starts from);
// `calibrate`: one run of the calibrate command with a candidate plan; `before_measuring`:
// called once, just before the first candidate is measured (never when the cache answers or
// nothing is measured); what it throws ends the calibration. A cache file that cannot be
// trusted is a PlanError naming it, except with kAlways, which replaces it with a warning.
PlanCalibration calibration_for_plan(const PlanRequest& request, const nlohmann::json& plan,
                                     const nlohmann::json& config, const CalibrateCommand& calibrate,
                                     const std::function<void(int, int)>& progress,
                                     const std::function<void()>& before_measuring);

}  // namespace mlhost
