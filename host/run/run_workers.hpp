// A planned run carried out: the run folder written (by rank 0's host), one supervised
// worker per rank this host starts, device telemetry, and how the run ended told from the
// workers' ends (a crash, a lost rank, a kill for memory, a stop request).
#pragma once

#include <filesystem>

#include <nlohmann/json.hpp>

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

// Returns 0 when the run completed, kWorkerCancelled when it was stopped on request (it
// saved); throws HostError when it failed, after recording how in summary.json.
int run_workers(const RunJob& job);

}  // namespace mlhost
