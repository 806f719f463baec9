// `--batch-size auto`: the batch a run trains with, found by the algorithm's batch search
// (runtime batch_finder.hpp) in a worker under the plan's memory limit, and cached per machine,
// algorithm and config like a calibration (calibration_cache.hpp).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "plan/calibration_for_run.hpp"

namespace mlhost {

// The search's result ({"batch", "reason", "trials", "complete"}) and in `status` whether it
// was measured now or cached; with `may_measure` false (--print-plan) only a cached one, else
// null. Throws HostError (exit status 2) naming --batch-size when the algorithm's batch
// cannot change (no batch_size in its config, no calibrate command), when not even the first
// batch fits, and for a cache file that cannot be trusted.
nlohmann::json batch_size_for_run(const RunCalibrationInputs& in, bool may_measure, std::string& status);

}  // namespace mlhost
