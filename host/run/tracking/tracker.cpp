#include "run/tracking/tracker.hpp"

#include <spdlog/spdlog.h>

namespace mlhost {

namespace fs = std::filesystem;

namespace {

std::string where(const MlflowTracking& t, const SyncResult& r) {
  std::string s = t.server.uri;
  if (!r.experiment_id.empty()) s += ", experiment " + r.experiment_id;
  if (!r.run_id.empty()) s += ", run " + r.run_id;
  return s;
}

}  // namespace

RunTracker::RunTracker(MlflowTracking tracking, fs::path run_dir)
    : tracking_(std::move(tracking)),
      run_dir_(std::move(run_dir)),
      // A second of slack for file systems whose clocks lag (NFS).
      started_(std::filesystem::file_time_type::clock::now() - std::chrono::seconds(1)) {
  thread_ = std::thread([this] { loop(); });
}

RunTracker::~RunTracker() {
  try {
    finish();
  } catch (...) {
    // A destructor during unwinding: the folder keeps the data; --sync-tracking sends it.
  }
}

bool RunTracker::folder_is_this_runs() const {
  std::error_code ec;
  const auto written = fs::last_write_time(run_dir_ / "config.json", ec);
  return !ec && written >= started_;
}

void RunTracker::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    try {
      if (folder_is_this_runs()) report(sync_mlflow(run_dir_, tracking_, SyncMode::kLive), false);
    } catch (const std::exception& e) {
      spdlog::warn("MLflow tracking: {}", e.what());
    }
    lock.lock();
    wake_.wait_for(lock, tracking_.sync_interval, [this] { return stop_; });
  }
}

SyncResult RunTracker::finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return {};
    finished_ = true;
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  SyncResult r;
  if (!folder_is_this_runs()) {
    r.ok = true;  // the run never wrote its folder: nothing of it to send
    return r;
  }
  try {
    r = sync_mlflow(run_dir_, tracking_, SyncMode::kEnded);
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  report(r, true);
  return r;
}

void RunTracker::report(const SyncResult& r, bool last) {
  for (const std::string& note : r.notes)
    if (notes_seen_.insert(note).second) spdlog::info("MLflow tracking: {}", note);
  if (!r.ok) {
    if (last) {
      log_sync_result(r, run_dir_, tracking_);
    } else if (r.error != last_error_) {
      spdlog::warn("MLflow tracking: {}; the run goes on, its data stays in {} and is sent when the server answers",
                   r.error, run_dir_.string());
    } else {
      spdlog::debug("MLflow tracking: still failing: {}", r.error);
    }
    last_error_ = r.error;
    return;
  }
  if (!last_error_.empty()) spdlog::info("MLflow tracking: {} answers again; sending the run", tracking_.server.uri);
  last_error_.clear();
  if (last) spdlog::info("MLflow tracking: run sent to {}{}", where(tracking_, r),
                         r.status_sent.empty() ? "" : " (" + r.status_sent + ")");
}

void log_sync_result(const SyncResult& r, const fs::path& run_dir, const MlflowTracking& tracking) {
  if (r.ok) return;
  spdlog::warn("MLflow tracking: {}; nothing is lost: the run folder keeps everything and `host --sync-tracking {}` "
               "sends what the server has not got (tracking/mlflow.json says how far it got)",
               r.error, run_dir.string());
  (void)tracking;
}

}  // namespace mlhost
