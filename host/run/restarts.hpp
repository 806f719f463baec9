// --max-restarts: the workers this host started, started again from the run's last
// checkpoint when one of them fails, as torchrun's --max-restarts does for its workers.
//
// Every failure after the workers started counts (a crash, a kill, a rank that failed or lost
// a peer); a stop request, a preemption and a run that could not start do not. Each restart
// is logged with its cause and listed under "restarts" in summary.json; when none is left the
// run fails with every cause. A run across machines restarts on each machine whose ranks
// failed (they all fail when one does: their peer is gone) and meets again at the same
// address, so every machine needs the same --max-restarts.
#pragma once

#include "run/run_workers.hpp"

namespace mlhost {

// run_workers(job), and again with job.resume set after each failure, up to max_restarts
// times. Returns run_workers' status; throws its error when no restart is left.
int run_with_restarts(RunJob job, int max_restarts);

}  // namespace mlhost
