// --sync-tracking RUN_DIR, and the tracking settings --track takes from the environment.
#include <cstdlib>
#include <iostream>

#include <spdlog/spdlog.h>

#include "cli/commands.hpp"
#include "run/tracking/tracker.hpp"

namespace mlhost {

namespace fs = std::filesystem;

MlflowTracking mlflow_tracking(const CliOptions& options, const std::string& settings_experiment) {
  MlflowTracking t = mlflow_tracking_from_env([](const char* name) { return std::getenv(name); }, options.mlflow_experiment);
  if (t.experiment_name.empty()) t.experiment_name = settings_experiment;
  if (const std::string why = unsupported_tracking_uri(t.server.uri); !why.empty())
    throw HostError("MLflow tracking: " + why, kExitBadInput);
  if (!t.interval_error.empty()) throw HostError("MLflow tracking: " + t.interval_error, kExitBadInput);
  return t;
}

int command_sync_tracking(const CliOptions& options) {
  const fs::path& dir = options.sync_tracking_dir;
  for (const char* f : {"config.json", "plan.json"})
    if (!fs::is_regular_file(dir / f))
      throw HostError("--sync-tracking: '" + dir.string() + "' holds no run (no " + f + ")", kExitBadInput);
  const MlflowTracking tracking = mlflow_tracking(options, "");
  SyncResult r;
  try {
    r = sync_mlflow(dir, tracking, SyncMode::kEnded);
  } catch (const std::exception& e) {
    throw HostError(std::string("--sync-tracking: ") + e.what());
  }
  for (const std::string& note : r.notes) spdlog::info("MLflow tracking: {}", note);
  if (!r.ok) {
    log_sync_result(r, dir, tracking);
    return kExitFailure;
  }
  std::cout << "MLflow run " << r.run_id << " (experiment " << r.experiment_id << ") on " << tracking.server.uri
            << ": sent " << r.params_sent << " params, " << r.metrics_sent << " metric points, " << r.artifacts_sent
            << " artifacts" << (r.status_sent.empty() ? "" : ", status " + r.status_sent)
            << (fs::exists(dir / "summary.json") ? "" : " (no summary.json: the run has not ended; its status is left as it is)")
            << "\n";
  if (!r.artifacts_not_sent.empty()) {
    // Everything this server can take arrived; the files it cannot take (its experiment's
    // artifact store is not behind its proxy) no sync will send: say what stays and why, and
    // succeed, or a standard `mlflow server --default-artifact-root DIR` would fail every sync.
    std::string names;
    for (const std::string& n : r.artifacts_not_sent) names += (names.empty() ? "" : ", ") + n;
    spdlog::warn("MLflow tracking: everything else arrived; {} artifact{} this server cannot take stay in {} ({}): {}",
                 r.artifacts_not_sent.size(), r.artifacts_not_sent.size() == 1 ? "" : "s", dir.string(), names,
                 r.artifacts_not_sent_why);
  }
  return 0;
}

}  // namespace mlhost
