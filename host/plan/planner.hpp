// The planning stage's entry point: plan_run() makes the whole execution plan of a run and is
// its only writer (docs/plan.md). From the chosen device, the algorithm's description and
// config, the device rules, the hardware settings file, the command line and the launch
// layout it decides every value with its source; it calibrates and finds the batch size
// where asked (measuring through PlanServices), marks what each value does on this run, lays
// out the ranks and prepares each worker's environment. Later stages read the result.
//
// Planning spawns nothing itself: calls into plugins and measurements in workers go through
// PlanServices, which the run stage implements with child processes and tests with fakes.
#pragma once

#include "plan/plan_types.hpp"

namespace mlhost {

// Makes the plan. Throws PlanError for what the user must change (exit status 2), HostError
// for what failed (a plugin, a measurement).
PlannedRun plan_run(const PlanRequest& request, PlanServices& services);

}  // namespace mlhost
