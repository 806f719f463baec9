#include "run/plan_services.hpp"

#include "common/stop_request.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "plugins/plugin_calls.hpp"
#include "run/worker.hpp"

namespace mlhost {

namespace fs = std::filesystem;
using nlohmann::json;

WorkerPlanServices::WorkerPlanServices(const Discovery& discovery)
    : discovery_(discovery), progress_(stderr, ::isatty(STDERR_FILENO) != 0, std::chrono::seconds(5)) {}

json WorkerPlanServices::describe_run(const AlgorithmInfo& algorithm, const std::string& command, const json& config,
                                      const Device& device, const json& plan, const fs::path& run_dir) {
  try {
    return mlhost::describe_run(algorithm.manifest, command, config, device_to_json(device), plan, run_dir.string());
  } catch (const HostError& e) {
    if (e.exit_code() == kExitBadInput) throw PlanError(e.what());
    throw;
  }
}

json WorkerPlanServices::device_environment(const Device& device, const json& plan) {
  return prepare_environment(discovery_.usable_device_plugin(device.plugin).manifest, device.index, plan);
}

CalibrateOutcome WorkerPlanServices::calibrate(const AlgorithmInfo& algorithm, const WorkerPlacement& worker,
                                               const json& plan, const json& config,
                                               std::chrono::steady_clock::time_point deadline) {
  progress_.clear();
  // A folder of its own for the worker's files (log, metrics, summary), removed after.
  std::string pattern = (fs::temp_directory_path() / "mlhost-calibration-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) throw HostError("calibration: cannot make a temporary folder in " + pattern);
  const fs::path dir = pattern;
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{dir};

  WorkerSpec spec = worker_spec(algorithm.manifest, "calibrate", worker, config, plan, dir);
  spec.quiet = true;
  spec.abandon_on_stop = true;  // a user's stop ends the measurement within a poll, caching nothing
  CalibrateOutcome outcome;
  const GroupOutcome group = supervise_workers({spec}, nullptr, deadline);
  if (group.killed_on_request) throw HostError("calibration stopped on request", kExitCancelled);
  if (group.not_started || first_stop_signal() != 0) {  // a stop request came: the run ends once planning returns
    outcome.error = "stopped on request";
    return outcome;
  }
  if (group.timed_out) {
    outcome.timed_out = true;
    return outcome;
  }
  std::ifstream in_summary(dir / "summary.json");
  const json summary = json::parse(in_summary, nullptr, /*allow_exceptions=*/false);
  outcome.result = summary.is_object() ? summary.value("result", json()) : json();
  const WorkerOutcome& w = group.workers[0];
  if (w.failed() || !outcome.result.is_object())
    outcome.error = summary.is_object() && summary.value("error", json()).is_string()
                        ? summary["error"].get<std::string>()
                        : "the calibrate command failed (" +
                              (w.signal ? "signal " + std::to_string(w.signal) : "exit status " + std::to_string(w.exit_code)) +
                              ")";
  return outcome;
}

void WorkerPlanServices::calibration_progress(int done, int planned) {
  if (done >= planned) {
    progress_.clear();
    return;
  }
  progress_.update(done, planned, "settings");
}

}  // namespace mlhost
