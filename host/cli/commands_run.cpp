// --describe, --print-plan and --algorithm: from the set-up to the worker's end.
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include <spdlog/spdlog.h>

#include "cli/commands.hpp"
#include "cli/config_reference.hpp"
#include "cli/launch_options.hpp"
#include "cli/run_setup.hpp"
#include "common/stop_request.hpp"
#include "plan/plan_text.hpp"
#include "plugins/plugin_calls.hpp"
#include "run/benchmark_report.hpp"
#include "run/host_log.hpp"
#include "run/restarts.hpp"
#include "run/run_files.hpp"
#include "run/run_record.hpp"
#include "run/run_workers.hpp"
#include "run/tracking/tracker.hpp"

namespace mlhost {

using nlohmann::json;
namespace fs = std::filesystem;
using Calibrate = MeasurementPolicy::Calibrate;

int command_describe(const CliOptions& options) {
  const Discovery discovery = discover_plugins(discovery_options(options));
  const AlgorithmInfo algorithm = describe_algorithm(discovery.usable_algorithm(options.describe).manifest);
  if (options.describe_format == "markdown") std::cout << config_reference_markdown(algorithm);
  else if (options.describe_format == "json") std::cout << algorithm.to_json().dump(2) << "\n";
  else std::cout << algorithm_summary_text(algorithm);
  return 0;
}

namespace {

Launch launch_of(const CliOptions& options) {
  try {
    return resolve_launch(options, [](const char* name) { return std::getenv(name); });
  } catch (const CliError& e) {
    throw HostError(e.what(), kExitBadInput);
  }
}

// MLH_NO_CALIBRATE=1 (anything but empty or 0): --no-calibrate for every run, e.g. in CI jobs.
bool no_calibrate_env() {
  const char* v = std::getenv("MLH_NO_CALIBRATE");
  return v && *v && std::strcmp(v, "0") != 0;
}

// Whether a run calibrates first, and why not when it does not.
MeasurementPolicy run_measurement(const CliOptions& options, const Launch& launch) {
  if (launch.distributed())
    return measurement_policy(options, Calibrate::kCachedOnly, "distributed runs do not calibrate ('host --calibrate' first)");
  if (options.no_calibrate) return measurement_policy(options, Calibrate::kCachedOnly, "--no-calibrate");
  if (no_calibrate_env()) return measurement_policy(options, Calibrate::kCachedOnly, "MLH_NO_CALIBRATE is set");
  return measurement_policy(options, Calibrate::kIfMissing);
}

// The benchmark table (or JSON) from the run's summary.
void print_benchmark(const CliOptions& options, const fs::path& run_dir, const json& plan) {
  std::ifstream in(run_dir / "summary.json");
  const json summary = json::parse(in, nullptr, /*allow_exceptions=*/false);
  const json result = summary.is_object() ? summary.value("result", json()) : json();
  const std::string allocator =
      summary.is_object() && summary.value("worker", json()).is_object() ? summary["worker"].value("allocator", "") : "";
  std::string text;
  try {
    text = options.json ? benchmark_json(result, plan, allocator).dump(2) + "\n" : benchmark_table(result, plan, allocator);
  } catch (const std::runtime_error& e) {
    throw HostError(e.what());
  }
  std::cout << text;
  host_log::write_line("info", text);
}

}  // namespace

int command_print_plan(const CliOptions& options) {
  // What the run would do about calibrating, said as the preview's: it measures nothing.
  MeasurementPolicy measurement = run_measurement(options, launch_of(options));
  if (measurement.calibrate == Calibrate::kIfMissing)
    measurement = measurement_policy(options, Calibrate::kCachedOnly, "a run calibrates first ('host --calibrate' does now)");
  measurement.may_search_batch = false;
  measurement.previews_a_run = true;
  const RunSetup s = setup_run(options, launch_of(options), measurement);
  if (s.complete) {
    std::cout << *s.complete << "\n";
    return 0;
  }
  std::cout << plan_to_text(s.planned.plan);
  if (s.algorithm)
    std::cout << "\nConfig of " << s.algorithm->name() << " (" << s.planned.command << ")\n"
              << s.planned.config.dump(2) << "\n";
  return 0;
}

namespace {

// Stop requests are kept from here to the end of the run, the preemption signal included, and
// the workers learn which signal that is (they inherit MLH_PREEMPT_SIGNAL).
void keep_stop_requests(const CliOptions& options) {
  set_preemption_signal(options.preempt_signal);
  if (options.preempt_signal != 0) ::setenv("MLH_PREEMPT_SIGNAL", std::to_string(options.preempt_signal).c_str(), 1);
  record_stop_signals();
}

// A stop that came while planning: nothing trained, nothing written.
int stopped_before_training(int sig) {
  const bool preempted = is_preemption(sig);
  spdlog::warn("{} while planning: {} before training; nothing was written", signal_name(sig),
               preempted ? "preempted" : "stopped");
  return preempted ? kExitPreempted : kExitCancelled;
}

}  // namespace

int command_run(const CliOptions& options) {
  keep_stop_requests(options);
  if (options.track == "mlflow") mlflow_tracking(options, "");  // a missing or unusable URI stops the run before it starts
  const Launch launch = launch_of(options);
  // The default folder's name holds the time, which differs between the hosts of one run.
  if (launch.distributed() && (launch.external() || launch.nnodes > 1) && options.run_dir.empty())
    throw HostError(std::string(launch.external() ? "a rank started by " + launch.source.substr(0, launch.source.find(' '))
                                                  : "a run across machines (--nnodes)") +
                        " needs --run-dir, a folder every rank sees: rank 0 writes the run there",
                    kExitBadInput);
  if (launch.external() && options.max_restarts > 0)
    throw HostError("--max-restarts restarts the workers this host starts; this process is one rank started by " +
                        launch.source.substr(0, launch.source.find(' ')) +
                        ", which restarts ranks itself (torchrun --max-restarts N, SLURM --requeue)",
                    kExitBadInput);
  if (launch.distributed() && options.batch_size_auto)
    throw HostError("--batch-size auto does not run in a distributed launch: find the batch with one process "
                    "(host --algorithm NAME --batch-size auto), then give every rank --batch-size N",
                    kExitBadInput);
  RunSetup s = setup_run(options, launch, run_measurement(options, launch), /*registers=*/true);
  if (s.complete) {
    spdlog::info("{}", *s.complete);
    return 0;
  }
  replan_if_joined(s, launch);
  if (const int sig = first_stop_signal()) return stopped_before_training(sig);
  const RankedDevice& chosen = s.probe.ranking.devices[*s.probe.ranking.chosen];
  spdlog::info("device: {} ({}), {}", s.device.id(), s.device.name, chosen.reason);

  RunJob job;
  job.algorithm = s.algorithm->manifest;
  job.device_plugin = s.discovery.usable_device_plugin(s.device.plugin).manifest;
  job.planned = &s.planned;
  job.probe = probe_report_to_json(s.probe);
  job.run_dir = s.run_dir;
  job.resume = s.resume;
  job.launch = launch;
  job.resume_command = "host --algorithm " + s.algorithm->name() + " --run-dir " + s.run_dir.string() + " --resume";
  if (s.on_trained_run) {
    // Its own folder, made by this host: the hosts of several machines would each make another.
    if (launch.first_rank != 0 || launch.nnodes > 1)
      throw HostError("--command " + s.planned.command + " on a trained run runs on one machine (its ranks from "
                      "--nproc-per-node at most): it writes a folder of its own inside " + s.run_dir.string(),
                      kExitBadInput);
    try {
      job.run_dir = make_command_dir(s.run_dir, s.planned.command);
    } catch (const std::exception& e) {
      throw HostError(e.what(), kExitBadInput);
    }
    job.resume = false;
    spdlog::info("{} of the run in {}: its files go to {}; the run's own files stay as they are", s.planned.command,
                 s.run_dir.string(), job.run_dir.string());
  }
  // --track mlflow: rank 0's host sends the run while it trains and closes it at the end, in
  // any case (the tracker's destructor does when the run throws); the server never costs the
  // run its exit status or files.
  std::unique_ptr<RunTracker> tracker;
  const std::optional<Setting> track_setting = s.settings ? s.settings->get("track", s.device.kind) : std::nullopt;
  const std::string track = !options.track.empty() ? options.track : track_setting ? track_setting->value : "none";
  if (track == "mlflow" && launch.first_rank == 0) {
    const std::optional<Setting> experiment = s.settings ? s.settings->get("mlflow_experiment", s.device.kind) : std::nullopt;
    if (options.track.empty()) spdlog::info("MLflow tracking: track = mlflow in {}", track_setting->origin);
    MlflowTracking tracking = mlflow_tracking(options, experiment ? experiment->value : "");
    tracking.tags["algorithm"] = s.algorithm->name();
    tracking.tags["command"] = s.planned.command;
    tracking.tags["device"] = s.device.id();
    tracking.tags["world_size"] = std::to_string(launch.world_size);
    if (job.algorithm.torch_version) tracking.tags["libtorch_version"] = *job.algorithm.torch_version;
    spdlog::info("MLflow tracking: sending the run to {}{}", tracking.server.uri,
                 tracking.experiment_name.empty() ? "" : ", experiment '" + tracking.experiment_name + "'");
    tracker = std::make_unique<RunTracker>(std::move(tracking), job.run_dir);
  }
  // A resumed run the algorithm refuses (every checkpoint damaged, its data gone bad) keeps
  // its files as they were: the host's records of this attempt are taken back with the rest.
  std::optional<RunRecordSnapshot> record;
  if (s.resume && !s.on_trained_run && launch.first_rank == 0) record = RunRecordSnapshot::take(s.run_dir);
  int status = 0;
  try {
    status = run_with_restarts(job, options.max_restarts);
  } catch (const HostError& e) {
    // Input found bad while training keeps what this attempt wrote, its log included.
    if (e.exit_code() != kExitBadInput || !record || dynamic_cast<const InputFailedWhileTraining*>(&e)) throw;
    host_log::detach();  // the log goes back as it was with the rest
    const std::string not_restored = record->restore();
    throw HostError(std::string(e.what()) + (not_restored.empty()
                                                 ? "; the run's files are as they were before this command"
                                                 : "; could not put back " + not_restored),
                    kExitBadInput);
  }
  if (tracker) tracker->finish();
  if (status == 0 && options.benchmark && launch.first_rank == 0) print_benchmark(options, job.run_dir, s.planned.plan);
  if (s.on_trained_run) {
    const std::string results = s.planned.command + ": results in " + job.run_dir.string();
    std::cerr << results << "\n";
    host_log::write_line("info", results);
  }
  host_log::detach();
  // A command that is not training (build-data, benchmark), given no --run-dir, keeps the
  // folder made for it only when it wrote something there: its output went elsewhere (the
  // dataset folder, the terminal) and its log to the terminal.
  if (status == 0 && options.run_dir.empty() && !s.on_trained_run && !launch.distributed() &&
      s.planned.command != s.algorithm->default_command() && holds_only_host_records(job.run_dir)) {
    std::error_code ec;
    fs::remove_all(job.run_dir, ec);
    if (!fs::exists(job.run_dir, ec)) {
      fs::remove(job.run_dir.parent_path(), ec);  // runs/ too, when nothing else is in it
      spdlog::info("{} wrote nothing in its run folder, so none is kept (--run-dir DIR keeps its log and plan there)",
                   s.planned.command);
    }
  }
  return status;
}

}  // namespace mlhost
