// The values of a plan: each setting decided from its inputs, highest first: the command
// line, the user's config, the hardware settings file, the device rules, a calibration, the
// device's recommendation, a default (docs/plan.md, "Where each value comes from"). A step of
// plan_run(), which calls it again once a calibration or a batch search is known.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/calibration/result.hpp"
#include "plan/plan_types.hpp"
#include "plan/plan_writer.hpp"

namespace mlhost {

struct PlanValueInputs {
  const PlanRequest& request;
  // The calibration for this machine and algorithm (its choices count after the command line
  // and the settings file) and what became of calibrating ("measured now", "cached in FILE",
  // "not calibrated: --no-calibrate", ...).
  const CalibrationResult* calibration = nullptr;
  std::string calibration_status;
  // --batch-size auto: the batch size finder's result ({"batch", "reason", ...}); its batch
  // wins over everything else. The status says whether it was measured now or cached.
  const nlohmann::json* batch_search = nullptr;
  std::string batch_search_status;
};

// Writes the device's facts and every setting but the launch layout. Throws PlanError for a
// value that cannot work (a precision the device lacks, a preset the algorithm does not have).
void decide_plan_values(PlanWriter& plan, const PlanValueInputs& in);

// Whether a LibTorch version ("1.13.1", "2.15.0+cu130") is at least major.minor; one that does
// not read as a version counts as new enough (nothing is refused on a guess).
bool torch_version_at_least(const std::string& version, int major, int minor);

}  // namespace mlhost
