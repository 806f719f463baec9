// `--batch-size auto`: the batch a run trains with, found by the algorithm's batch search
// (runtime batch_finder.hpp) in a worker under the plan's memory limit, and cached per
// machine, algorithm and config like a calibration (cache.hpp). A step of plan_run().
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "plan/calibration/search.hpp"
#include "plan/plan_types.hpp"

namespace mlhost {

struct BatchSearch {
  nlohmann::json result;  // {"batch", "reason", "trials", "complete"}; null when none is known yet
  std::string status;     // measured now or cached (and where), or why none is known
};

// `plan` and `config`: the run's with its calibration. Without request.measurement's
// may_search_batch only a cached batch is taken (--print-plan). Throws PlanError naming
// --batch-size when the algorithm's batch cannot change (no batch_size in its config, no
// calibrate command), when not even the first batch fits, and for a cache file that cannot be
// trusted; HostError when the search fails.
BatchSearch batch_size_for_plan(const PlanRequest& request, const nlohmann::json& plan, const nlohmann::json& config,
                                const CalibrateCommand& calibrate);

}  // namespace mlhost
