// A planned run carried out: the run folder written (by rank 0's host), one supervised
// worker per rank this host starts, device telemetry, and how the run ended told from the
// workers' ends (a crash, a lost rank, a kill for memory, a stop request).
#pragma once

#include <filesystem>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "plan/planner.hpp"
#include "plugins/manifest.hpp"

namespace mlhost {

struct RunJob {
  PluginManifest algorithm;
  PluginManifest device_plugin;  // samples telemetry
  const PlannedRun* planned = nullptr;
  nlohmann::json probe;  // the probe report, saved as probe.json
  std::filesystem::path run_dir;
  bool resume = false;
  Launch launch;
  // How to continue this run after it died (the memory hint), e.g. "host --algorithm ppo
  // --run-dir R --resume".
  std::string resume_command;
};

// A run whose workers started and then failed: one crashed, was killed, or exited with an
// error. What --max-restarts restarts from the last checkpoint (run/restarts.hpp).
class WorkersFailed : public HostError {
 public:
  WorkersFailed(const std::string& message, std::string cause) : HostError(message), cause_(std::move(cause)) {}
  // The failure in a few words, e.g. "rank 1 was killed by signal 9 (Killed)".
  const std::string& cause() const { return cause_; }

 private:
  std::string cause_;
};

// A run that trained and then found its input bad (an environment library's NaN observation,
// a data file read mid-run): exit 2 as a refusal before training is, the user's to fix and
// not retried, but what the run wrote stays as it is (a resumed run's records are not put
// back as they were, as those of a refused resume are).
class InputFailedWhileTraining : public HostError {
 public:
  explicit InputFailedWhileTraining(const std::string& message) : HostError(message, kExitBadInput) {}
};

// Returns 0 when the run completed, kWorkerCancelled when it was stopped on request (it
// saved), kExitPreempted when the stop was a preemption; throws WorkersFailed when a worker
// failed, after recording how in summary.json, and HostError when the run could not start.
int run_workers(const RunJob& job);

}  // namespace mlhost
