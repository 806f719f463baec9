// The training worker: a child process of the host that loads the algorithm plugin (and
// with it LibTorch) and runs one command, with the environment the device plugin prepared
// already in place. The host supervises it and survives whatever happens inside.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <string>

#include "manifest.hpp"

namespace mlhost {

struct WorkerSpec {
  PluginManifest algorithm;
  std::string command;
  std::string config_json, device_json, torch_device, plan_json;
  std::filesystem::path run_dir;
  bool resume = false;
};

// Exit statuses of the worker process.
constexpr int kWorkerCompleted = 0;
constexpr int kWorkerFailed = 1;
constexpr int kWorkerCancelled = 130;

struct WorkerOutcome {
  int exit_code = -1;  // when it exited
  int signal = 0;      // when a signal ended it
  bool interrupted = false;       // the user asked the run to stop (Ctrl-C, SIGTERM, SIGHUP)
  bool killed_on_request = false;  // ... twice, so the worker was killed
};

// Runs `spec` in a supervised child process and waits for it; `started` is called with the
// worker's pid once it runs (e.g. to start telemetry). SIGINT/SIGTERM/SIGHUP sent to the
// host are passed to the worker as a request to stop; a second one kills it. The worker dies
// with the host.
WorkerOutcome supervise_worker(const WorkerSpec& spec, const std::function<void(pid_t)>& started);

// The worker's body (in the child): returns its exit status. Writes log.txt,
// metrics.jsonl, metrics.csv and summary.json in the run folder.
int worker_main(const WorkerSpec& spec);

}  // namespace mlhost
