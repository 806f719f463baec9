// The launcher's side of tracking: while a run goes on, a background thread syncs its folder
// to the tracking server every few seconds (cheap: only new metrics.jsonl lines are read);
// at the end one last sync closes the MLflow run with the status summary.json gives. The
// training never waits for the server: a sync that fails is a warning (once, until the server
// answers again), and what was not sent stays in the folder for the next sync or for
// `host --sync-tracking RUN_DIR`.
#pragma once

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "run/tracking/mlflow_sync.hpp"

namespace mlhost {

class RunTracker {
 public:
  // Syncs every tracking.sync_interval (MLH_TRACKING_INTERVAL_S, default 15 s).
  RunTracker(MlflowTracking tracking, std::filesystem::path run_dir);
  ~RunTracker();  // finish(), if not done
  RunTracker(const RunTracker&) = delete;
  RunTracker& operator=(const RunTracker&) = delete;

  // Stops the thread and syncs once more as an ended run. Returns that sync's result.
  SyncResult finish();

 private:
  void loop();
  // Whether the folder's config.json was written by this launch: a folder that turns out to
  // be another run's (the launch refused it) is never sent.
  bool folder_is_this_runs() const;
  // Logs a sync's outcome: a failure as a warning when it is new, a recovery, the notes once.
  void report(const SyncResult& r, bool last);

  MlflowTracking tracking_;
  std::filesystem::path run_dir_;
  std::filesystem::file_time_type started_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  bool finished_ = false;
  std::string last_error_;
  std::set<std::string> notes_seen_;
  std::thread thread_;
};

// Tells the user how a sync went (used by `host --sync-tracking`): the notes, and the error
// with what to do about it.
void log_sync_result(const SyncResult& r, const std::filesystem::path& run_dir, const MlflowTracking& tracking);

}  // namespace mlhost
