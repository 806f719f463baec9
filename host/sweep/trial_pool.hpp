// Runs a sweep's trials in child processes of the host, at most `parallel` at once, each
// with its output in a log file of its own. A stop request (Ctrl-C, SIGTERM, the preemption
// signal) goes on to the running trials, each in a process group of its own so that it gets
// the stop once, and they end as any run does (a preempted one saves a checkpoint); no
// further trial starts.
#pragma once

#include <filesystem>
#include <functional>
#include <vector>

#include "sweep/sweep_spec.hpp"

namespace mlhost {

struct TrialLaunch {
  SweepTrial trial;
  std::filesystem::path log;  // the child's stdout and stderr, appended
};

struct TrialPoolEvents {
  // In the child, after its output went to the log: the trial's run; returns its exit status.
  // `slot` (0 to parallel - 1) is free while it runs: a GPU index, say.
  std::function<int(const SweepTrial&, int slot)> run;
  std::function<void(const SweepTrial&, int slot)> started;
  std::function<void(const SweepTrial&, int exit_status, double seconds)> ended;
};

// Returns the first stop signal that came (0: none; every trial then ran).
int run_trial_pool(const std::vector<TrialLaunch>& launches, int parallel, const TrialPoolEvents& events);

}  // namespace mlhost
