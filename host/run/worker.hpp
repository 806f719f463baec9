// The training worker: a child process of the host that loads the algorithm plugin (and
// with it LibTorch) and runs one command, with the environment the device plugin prepared
// already in place. The host supervises it and survives whatever happens inside.
//
// The worker is the host's own program started afresh (fork, then exec with the prepared
// environment), not a bare fork: what must be in place before a program's first
// instruction, such as an allocator library in LD_PRELOAD or glibc's malloc tunables, then
// is, and the host itself never runs with it. The spec reaches it through an anonymous
// memory file whose descriptor it inherits (--mlh-worker-spec-fd N, see main.cpp).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "common/stop_request.hpp"
#include "common/worker_flag.hpp"
#include "plan/planner.hpp"
#include "plugins/manifest.hpp"

namespace mlhost {

struct WorkerSpec {
  PluginManifest algorithm;
  std::string command;
  std::string config_json, device_json, torch_device, plan_json;
  std::filesystem::path run_dir;
  bool resume = false;
  // Distributed: this worker's place; ranks other than 0 write their files (log, metrics,
  // summary) under <run_dir>/ranks/<rank>/ and print only warnings and errors.
  int rank = 0, world_size = 1, local_rank = 0;
  std::map<std::string, std::string> environment;  // set in the worker before the plugin loads
  // Only warnings and errors on the terminal, no progress bar (calibration's workers, which
  // the host's own display reports on).
  bool quiet = false;
  // Nothing to save (a calibration's measurement): a stop request kills it at once rather
  // than waiting for it to reach a step where it would save. Host-side only, not sent.
  bool abandon_on_stop = false;

  std::filesystem::path output_dir() const;
  // What messages call the work: "training" for train, else "'eval'" and the like.
  std::string work_name() const { return command == "train" || command.empty() ? "training" : "'" + command + "'"; }
};

// The spec of a worker that runs `command` of `algorithm` as `worker` says (its rank,
// device, torch device and environment) with this config and plan, writing into `run_dir`
// (its rank's folder there). The one place a spec is made.
WorkerSpec worker_spec(const PluginManifest& algorithm, const std::string& command, const WorkerPlacement& worker,
                       const nlohmann::json& config, const nlohmann::json& plan, const std::filesystem::path& run_dir);

// Exit statuses of the worker process.
constexpr int kWorkerCompleted = 0;
constexpr int kWorkerFailed = 1;
constexpr int kWorkerCancelled = kExitCancelled;  // the host exits with it too
// The algorithm found its input bad (MLH_ERR_INVALID_ARGUMENT: a config value, a data file,
// an --init-from file, an environment's observation), before training or while it trained;
// the host exits with it too, and restarts do not retry it.
constexpr int kWorkerBadInput = kExitBadInput;

struct WorkerOutcome {
  int exit_code = -1;  // when it exited
  int signal = 0;      // when a signal ended it

  // Died by a signal, or exited with neither success nor cancellation.
  bool failed() const { return signal != 0 || (exit_code != kWorkerCompleted && exit_code != kWorkerCancelled); }
};

struct GroupOutcome {
  std::vector<WorkerOutcome> workers;  // in the order of the specs
  bool killed_on_request = false;      // the user asked twice (Ctrl-C), so the workers were killed
  // Workers the host killed because they still ran 3 s after another failed (they would have
  // waited for it in a collective until the timeout), by index.
  std::vector<int> stopped_by_host;
  bool timed_out = false;  // the deadline came first, and the workers were killed
  // A stop request (common/stop_request.hpp) had come before: no worker was started.
  bool not_started = false;
};

// Runs every spec in its own supervised child process and waits for all; `started` is called
// with the first worker's pid once they run (e.g. to start telemetry). SIGINT/SIGTERM/SIGHUP
// sent to the host are passed to every worker as a request to stop; a second one kills them.
// When one worker dies by a signal or exits with a failure, the others still running 3 s
// later are killed.
// The workers die with the host; nothing they started outlives them. At `deadline`, if given,
// workers still running are killed (timed_out).
GroupOutcome supervise_workers(const std::vector<WorkerSpec>& specs, const std::function<void(pid_t)>& started,
                               std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt);

// The worker's body (in the child): returns its exit status. Writes log.txt,
// metrics.jsonl, metrics.csv and summary.json in the run folder; the summary's "worker"
// object says which allocator the process runs with (worker_allocator()).
int worker_main(const WorkerSpec& spec);

// The worker program's entry (`host --mlh-worker-spec-fd N`, common/worker_flag.hpp): reads the spec from
// descriptor `fd_text` and runs worker_main.
int worker_program(const char* fd_text);

// The spec as JSON and back (what travels to the exec'd worker). The algorithm's manifest
// is read again from its file in the worker; from_json throws std::runtime_error when the
// text or the manifest does not fit.
nlohmann::json worker_spec_to_json(const WorkerSpec& spec);
WorkerSpec worker_spec_from_json(const nlohmann::json& j);

// The allocator this process runs with, from the libraries mapped into it: "jemalloc",
// "tcmalloc" or "glibc", with glibc's malloc tunables where set ("glibc (GLIBC_TUNABLES=...)").
std::string worker_allocator();

}  // namespace mlhost
