// --algorithm with --sweep or --seeds: a sweep. Each trial is an ordinary training run, in a
// folder of its own inside the sweep folder, run by command_run() in a child process of this
// host (sweep/trial_pool.hpp); the sweep folder keeps the spec (sweep.json), the trials' logs
// (logs/), and the results (trials.csv, summary.csv), rewritten as each trial ends.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <set>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/commands.hpp"
#include "cli/launch_options.hpp"
#include "cli/run_setup.hpp"
#include "common/stop_request.hpp"
#include "plan/algorithm_config.hpp"
#include "plugins/plugin_calls.hpp"
#include "probe/report.hpp"
#include "probe/torch_backend.hpp"
#include "run/progress.hpp"
#include "run/run_files.hpp"
#include "sweep/sweep_record.hpp"
#include "sweep/sweep_results.hpp"
#include "sweep/trial_pool.hpp"

namespace mlhost {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

HostError bad_input(const std::string& message) { return HostError(message, kExitBadInput); }

SweepSpec spec_of(const CliOptions& options) {
  SweepSpec spec;
  for (const std::string& text : options.sweep) spec.parameters.push_back(parse_sweep_parameter(text));
  spec.random_count = options.sweep_random;
  if (!options.seeds.empty()) spec.seeds = parse_seeds(options.seeds);
  return spec;
}

// Every trial's config must be one the algorithm takes: a misspelt key or a value of the wrong
// type stops the sweep before its first trial, naming the trial's values.
void check_trial_configs(const AlgorithmInfo& algorithm, const SweepRecord& record) {
  const json& schema = algorithm.config_schema;
  if (!record.spec.seeds.empty() &&
      !(schema.contains("properties") && schema["properties"].is_object() && schema["properties"].contains("seed")))
    throw bad_input("--seeds sets the config's 'seed', and " + algorithm.name() + " has no 'seed' in its config");
  json base = json::object();
  try {
    if (!record.config_file.empty()) base = load_config_file(record.config_file);
    for (const std::string& s : record.sets) apply_set(base, s, schema);
  } catch (const ConfigError& e) {
    throw bad_input(e.what());
  }
  std::set<std::string> checked;
  for (const SweepTrial& trial : record.trials) {
    const std::vector<std::string> sets = trial.sets();
    std::string key;
    for (const auto& s : sets) key += s + "\n";
    if (!checked.insert(key).second) continue;
    try {
      json config = base;
      for (const std::string& s : sets) apply_set(config, s, schema);
      validate_config(merge_config(algorithm.config_defaults, config), schema);
    } catch (const ConfigError& e) {
      throw bad_input("sweep trial " + trial.configuration() + (trial.seed ? " seed=" + std::to_string(*trial.seed) : "") +
                      ": " + e.what());
    }
  }
}

// What the command line asks for; on --resume, checked against what the sweep folder holds.
SweepRecord sweep_record(const CliOptions& options, const AlgorithmInfo& algorithm, const fs::path& dir) {
  SweepRecord wanted;
  wanted.algorithm = algorithm.name();
  try {
    wanted.spec = spec_of(options);
    wanted.trials = expand_trials(wanted.spec);
  } catch (const SweepError& e) {
    throw bad_input(e.what());
  }
  if (!options.config_file.empty()) wanted.config_file = fs::absolute(options.config_file).lexically_normal().string();
  wanted.sets = options.sets;

  std::optional<SweepRecord> saved;
  try {
    saved = read_sweep_record(dir);
  } catch (const SweepError& e) {
    throw bad_input(e.what());
  }
  const bool resume = options.resume || (options.resume_auto && saved);
  if (!resume) {
    std::error_code ec;
    if (fs::exists(dir, ec) && !fs::is_empty(dir, ec))
      throw bad_input("sweep folder " + dir.string() + " is not empty" +
                      (saved ? ": it holds a sweep, which --resume continues" : "; choose another --run-dir"));
    return wanted;
  }
  if (!saved) throw bad_input("--resume: " + dir.string() + " holds no sweep (no sweep.json)");
  if (saved->identity() != wanted.identity())
    throw bad_input("--resume: the sweep in " + dir.string() + " was started with " + saved->identity().dump() +
                    ", and this command line asks for " + wanted.identity().dump() +
                    "; continue it with the same --algorithm, --sweep, --sweep-random, --seeds, --config and --set");
  return *saved;
}

// The trial's own run: this command line's options, the trial's values after its --set, its
// folder, continued where it holds a run (a trial a stopped sweep left half done).
CliOptions trial_options(const CliOptions& options, const SweepRecord& record, const SweepTrial& trial,
                         const fs::path& dir, const std::string& device) {
  CliOptions o = options;
  o.action = CliOptions::Action::kRun;
  o.sweep.clear();
  o.seeds.clear();
  o.sweep_random = 0;
  o.sets = record.sets;
  for (const std::string& s : trial.sets()) o.sets.push_back(s);
  if (!record.config_file.empty()) o.config_file = record.config_file;
  o.run_dir = dir / trial.name();
  o.resume = false;
  o.resume_auto = true;
  if (!device.empty()) o.device = DeviceRequest::parse(device);
  return o;
}

// Trials at once: --sweep-parallel N, else one per GPU of the chosen kind (each trial then runs
// on its own), else on a CPU as many as the cores hold at the threads the plan gives a trial
// (one, unless the settings file gives a run fewer threads than the machine has).
struct Parallelism {
  int trials = 1;
  std::vector<std::string> devices;  // per slot, "cuda:1"; empty: each trial picks as the command line says
  std::string why;
};

// The threads the plan gives the first trial, from what is cached (no calibration, no batch
// search: the trial does those when it runs).
int planned_cpu_threads(const CliOptions& trial) {
  MeasurementPolicy measurement =
      measurement_policy(trial, MeasurementPolicy::Calibrate::kCachedOnly, "the sweep only reads the plan's threads");
  measurement.may_search_batch = false;
  Launch launch;
  try {
    launch = resolve_launch(trial, [](const char* name) { return std::getenv(name); });
  } catch (const CliError& e) {
    throw bad_input(e.what());
  }
  const RunSetup setup = setup_run(trial, launch, measurement);
  const json& threads = setup.planned.plan["threads"]["intra_op"];
  return threads.is_number_integer() && threads.get<int>() > 0 ? threads.get<int>() : 0;
}

Parallelism parallelism(const CliOptions& options, const Discovery& discovery, const AlgorithmInfo& algorithm,
                        const CliOptions& first_trial) {
  const ProbeReport probe = probe_and_rank(discovery, {algorithm.manifest}, options.device, options.no_gpu,
                                           std::chrono::milliseconds(options.probe_timeout_ms));
  const Device* chosen = &chosen_device_or_refuse(probe.ranking);
  Parallelism p;
  const bool accelerator = torch_backend(*chosen).accelerator;
  if (accelerator && options.device.index < 0) {
    for (const RankedDevice& r : probe.ranking.devices)
      if (r.position > 0 && r.device.kind == chosen->kind && r.device.available) p.devices.push_back(r.device.id());
  }
  if (options.sweep_parallel > 0) {
    p.trials = options.sweep_parallel;
    p.why = "--sweep-parallel";
    if (p.devices.size() < 2) p.devices.clear();
  } else if (p.devices.size() > 1) {
    p.trials = static_cast<int>(p.devices.size());
    p.why = "one per " + chosen->kind + " device";
  } else if (accelerator) {
    p.devices.clear();
    p.why = "one " + chosen->kind + " device";
  } else {
    const int cores = static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
    const int threads = planned_cpu_threads(first_trial);
    p.trials = threads > 0 ? std::max(1, cores / threads) : 1;
    p.why = "the plan gives a trial " + (threads > 0 ? std::to_string(threads) : std::string("every")) + " of " +
            std::to_string(cores) + " cores";
  }
  return p;
}

// A child's log is a file: plain lines, no colour codes.
void log_to_plain_stderr(const std::string& level) {
  auto logger = std::make_shared<spdlog::logger>("host", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("[%H:%M:%S.%e] [%l] %v");
  spdlog::set_level(spdlog::level::from_str(level));
}

std::string metric_brief(const TrialOutcome& o) {
  const auto metric = headline_metric(o);
  if (!metric) return "";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.4g", metric->second);
  return ", " + metric->first + " " + buffer;
}

std::vector<std::string> swept_keys(const SweepRecord& record) {
  std::vector<std::string> keys;
  for (const auto& p : record.spec.parameters) keys.push_back(p.key);
  return keys;
}

}  // namespace

int command_sweep(const CliOptions& options) {
  record_stop_signals();
  const Discovery discovery = discover_plugins(discovery_options(options));
  const AlgorithmInfo algorithm = describe_algorithm(discovery.usable_algorithm(options.algorithm).manifest);
  const fs::path dir = options.run_dir.empty() ? default_run_dir(algorithm.name() + "-sweep") : options.run_dir;
  const SweepRecord record = sweep_record(options, algorithm, dir);
  check_trial_configs(algorithm, record);
  CliOptions first_trial = trial_options(options, record, record.trials.front(), dir, "");
  first_trial.resume_auto = false;  // planned as a new run, whatever its folder holds
  const Parallelism parallel = parallelism(options, discovery, algorithm, first_trial);
  if (options.track == "mlflow") mlflow_tracking(options, "");  // as a run: a missing URI stops it before it starts

  try {
    fs::create_directories(dir / "logs");
    write_sweep_record(dir, record);
  } catch (const std::exception& e) {
    throw bad_input("sweep folder " + dir.string() + ": " + e.what());
  }
  const std::vector<std::string> keys = swept_keys(record);
  std::vector<TrialOutcome> outcomes;
  std::vector<TrialLaunch> launches;
  for (const SweepTrial& t : record.trials) {
    outcomes.push_back(read_trial_outcome(dir, t));
    if (!outcomes.back().completed()) launches.push_back({t, dir / "logs" / (t.name() + ".log")});
  }
  const size_t configurations = summarize(outcomes).size();
  const size_t total = record.trials.size(), already = total - launches.size();
  spdlog::info("sweep of {}: {} trials ({} configurations x {} seeds) in {}, {} at a time ({}); each trial's output "
               "in {}/logs{}",
               algorithm.name(), total, configurations, record.spec.seeds.empty() ? 1 : record.spec.seeds.size(),
               dir.string(), std::min<size_t>(parallel.trials, std::max<size_t>(launches.size(), 1)), parallel.why,
               dir.string(), already ? "; " + std::to_string(already) + " completed before, kept" : "");

  size_t done = already, ended_here = 0, failed = 0;
  double seconds_here = 0;
  TrialPoolEvents events;
  events.run = [&](const SweepTrial& trial, int slot) {
    log_to_plain_stderr(options.log_level);
    const std::string device = parallel.devices.empty() ? "" : parallel.devices[static_cast<size_t>(slot) % parallel.devices.size()];
    return command_run(trial_options(options, record, trial, dir, device));
  };
  events.started = [&](const SweepTrial& trial, int) {
    spdlog::info("sweep: {} started: {}{}", trial.name(), trial.configuration(),
                 trial.seed ? " seed=" + std::to_string(*trial.seed) : "");
  };
  events.ended = [&](const SweepTrial& trial, int exit_status, double seconds) {
    TrialOutcome outcome = read_trial_outcome(dir, trial);
    outcomes[static_cast<size_t>(trial.index - 1)] = outcome;
    ++ended_here;
    seconds_here += seconds;
    if (outcome.completed()) ++done;
    else if (exit_status != kExitCancelled && exit_status != kExitPreempted) ++failed;
    const size_t left = total - done - failed;
    std::string eta;
    if (left > 0 && !first_stop_signal())
      eta = ", ETA " + ProgressDisplay::format_duration(seconds_here / static_cast<double>(ended_here) *
                                                        std::ceil(static_cast<double>(left) / parallel.trials));
    const std::string how = outcome.completed() ? "completed" : outcome.status == "not run" ? "ended (exit status " +
                                                                                                 std::to_string(exit_status) + ")"
                                                                                           : outcome.status;
    spdlog::info("sweep: {} {} in {}{}; {}/{} done{}{}", trial.name(), how, ProgressDisplay::format_duration(seconds),
                 outcome.completed() ? metric_brief(outcome) : " (see " + (dir / "logs" / (trial.name() + ".log")).string() + ")",
                 done, total, failed ? ", " + std::to_string(failed) + " failed" : "", eta);
    try {
      write_sweep_csv(dir, keys, outcomes);
    } catch (const std::exception& e) {
      spdlog::warn("sweep: the tables were not written: {}", e.what());
    }
  };
  const int stop = run_trial_pool(launches, parallel.trials, events);

  write_sweep_csv(dir, keys, outcomes);
  std::cout << sweep_table_text(keys, outcomes);
  std::cout.flush();
  spdlog::info("sweep: {} of {} trials completed; tables in {} and {}", done, total, (dir / "summary.csv").string(),
               (dir / "trials.csv").string());
  if (stop) {
    spdlog::warn("sweep stopped by {}: the same command with --resume (or --resume auto) continues it", signal_name(stop));
    return is_preemption(stop) ? kExitPreempted : kExitCancelled;
  }
  if (done < total) {
    std::string which;
    for (const auto& o : outcomes)
      if (!o.completed()) which += (which.empty() ? "" : ", ") + o.trial.name() + " (" + o.status + ")";
    spdlog::error("sweep: {} of {} trials did not complete: {}; --resume runs them again", total - done, total, which);
    return 1;
  }
  return 0;
}

}  // namespace mlhost
