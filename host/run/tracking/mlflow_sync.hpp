// A run folder sent to an MLflow tracking server. The folder is the journal; this is a
// syncer: it reads the folder's files and sends what the server has not got yet, and keeps
// how far it got in tracking/mlflow.json (the cursor) in the folder. The same call serves the
// launcher's periodic syncs during a run, its last sync at the end, and
// `host --sync-tracking RUN_DIR` later, so a server that was down or refused a request gets
// everything once it answers, each metric point once.
//
// What is sent:
//   - a run (runs/create) in the experiment named by MLFLOW_EXPERIMENT_NAME or the option
//     (created when missing; else MLFLOW_EXPERIMENT_ID, else MLflow's Default, id 0), named
//     after the run folder, started when config.json was written, with tags: mlflow.runName,
//     mlflow.source.name, mlflow.user, and the launcher's (algorithm, command, device,
//     host_version, libtorch_version where known);
//   - params (runs/log-batch, 100 a call): config.json flattened to dotted keys (as
//     TensorBoard's hparams), and plan.json flattened under "plan.";
//   - metrics (runs/log-batch, 1000 a call): every line of metrics.jsonl, at its step and
//     wall-clock time;
//   - artifacts through the server's proxy (PUT mlflow-artifacts): config.json and plan.json
//     during the run, summary.json and model.safetensors at the end, each again when it changed;
//   - the status: RUNNING during the run, at the end from summary.json (completed: FINISHED;
//     cancelled, preempted: KILLED; anything else: FAILED) with the end time.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "run/tracking/mlflow_client.hpp"

namespace mlhost {

struct MlflowTracking {
  MlflowServer server;
  std::string experiment_name;  // --mlflow-experiment, else MLFLOW_EXPERIMENT_NAME
  std::string experiment_id;    // MLFLOW_EXPERIMENT_ID, used when no name is given
  // Tags the launcher knows and the folder does not say (algorithm, libtorch_version, ...);
  // kept in the cursor, so a later --sync-tracking sends them too.
  std::map<std::string, std::string> tags;
  // How often the launcher syncs while the run goes on: MLH_TRACKING_INTERVAL_S, default 15.
  // interval_error says why the variable's value was not taken ("" when it was, or unset).
  std::chrono::milliseconds sync_interval{15000};
  std::string interval_error;
};

// From the environment (MLflow's variables) and the experiment option ("" when not given).
MlflowTracking mlflow_tracking_from_env(const TrackingEnv& env, const std::string& experiment_option);

// kLive: the run is going on (RUNNING; summary.json, if any, is an earlier attempt's).
// kEnded: nothing writes the folder any more; when summary.json exists it says how the run
// ended, and the run is closed with that status; without one, the data is sent and the status
// left as it is.
enum class SyncMode { kLive, kEnded };

struct SyncResult {
  bool ok = false;              // everything there was to send arrived
  std::string error;            // else why not: names the server, the request, the status and the server's message
  std::string run_id;           // MLflow's run, once made
  std::string experiment_id;
  int64_t metrics_sent = 0;     // metric points sent by this call
  int64_t params_sent = 0;
  int64_t artifacts_sent = 0;
  std::string status_sent;      // the status this call set, if any
  std::vector<std::string> notes;  // what was changed to fit MLflow's rules (renamed keys, truncated values)
  // Files that cannot be sent to this run at all: its artifact store is not behind the
  // server's proxy (a path of the server's own, which the REST API cannot write).
  std::vector<std::string> artifacts_not_sent;
  std::string artifacts_not_sent_why;
};

// The cursor file of a run folder.
std::filesystem::path mlflow_cursor_path(const std::filesystem::path& run_dir);

// Sends what the server has not got. Never throws for the server's sake (an unreachable or
// refusing server is a SyncResult with ok false and the cursor as far as it got); throws
// std::runtime_error only when the run folder itself cannot be read or written.
SyncResult sync_mlflow(const std::filesystem::path& run_dir, const MlflowTracking& tracking, SyncMode mode);

// MLflow's rules, exposed for tests: a key with only the characters MLflow takes
// (alphanumerics, _ - . / space; others become '_') and at most 250 of them; a param value of
// at most 6000 characters.
std::string mlflow_key(const std::string& key);
std::string mlflow_param_value(const std::string& value, bool* truncated);

}  // namespace mlhost
