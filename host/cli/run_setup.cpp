#include "cli/run_setup.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "cli/commands.hpp"
#include "plan/algorithm_config.hpp"
#include "plan/calibration/cache.hpp"
#include "plan/hardware_settings_location.hpp"
#include "plan/machine_share.hpp"
#include "plugins/plugin_calls.hpp"
#include "run/plan_services.hpp"
#include "run/run_files.hpp"

namespace mlhost {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// What the user set: the resumed run's config (when resuming), then --config, then --set.
json user_config(const CliOptions& options, bool resume, const json& schema, const fs::path& run_dir) {
  json config = json::object();
  try {
    if (resume) config = load_config_file(run_dir / "config.json");
    if (!options.config_file.empty()) {
      // Its files and folders as --set's: from the folder the command was given in.
      json file = load_config_file(options.config_file);
      absolute_paths(file, schema, fs::current_path());
      config = merge_config(config, file);
    }
    for (const auto& s : options.sets) apply_set(config, s, schema);
  } catch (const ConfigError& e) {
    throw HostError(e.what(), kExitBadInput);
  }
  return config;
}

// "a.b 1 -> 2" for every value `now` sets differently from `before` (nested objects by key).
void list_changes(const json& before, const json& now, const std::string& prefix, std::vector<std::string>& out) {
  for (const auto& [key, value] : now.items()) {
    const std::string name = prefix + key;
    const json old = before.is_object() && before.contains(key) ? before[key] : json();
    if (value.is_object() && old.is_object()) list_changes(old, value, name + ".", out);
    else if (value != old) out.push_back(name + " " + (old.is_null() ? "unset" : old.dump()) + " -> " + value.dump());
  }
}

// A run is its algorithm plugin's: resumed, or a command run on it, with another plugin's code
// (a copy of protonet named myproto, say), it would load weights that code did not write.
// The run's plan.json names the plugin (its summary.json, for a run planned before it did).
void refuse_another_algorithm(const fs::path& run_dir, const std::string& algorithm) {
  for (const char* file : {"plan.json", "summary.json"}) {
    std::ifstream in(run_dir / file);
    const json record = json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!record.is_object() || !record.value("algorithm", json()).is_string()) continue;
    const std::string trained_by = record["algorithm"];
    if (trained_by == algorithm) return;
    throw HostError("--algorithm " + algorithm + ": the run in " + run_dir.string() +
                        " is the algorithm plugin '" + trained_by + "''s (its " + file +
                        "), and another plugin's code would misread its checkpoints: use --algorithm " + trained_by,
                    kExitBadInput);
  }
}

// --resume of a run whose training completed: nothing to do unless the command asks for more
// (a changed setting such as total_timesteps or epochs, or a run that ended at --max-steps
// resumed without it), which it then names. Returns what to tell the user when there is
// nothing to do.
std::optional<std::string> completed_run(const fs::path& run_dir, const json& resumed_config,
                                         const CliOptions& options) {
  std::ifstream in(run_dir / "summary.json");
  const json summary = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!summary.is_object() || summary.value("status", "") != "completed") return std::nullopt;
  std::vector<std::string> changes;
  json saved;
  try {
    saved = load_config_file(run_dir / "config.json");
  } catch (const ConfigError&) {
    return std::nullopt;  // the resume reports it
  }
  list_changes(saved, resumed_config, "", changes);
  if (!changes.empty()) {
    std::string listed;
    for (const std::string& c : changes) listed += (listed.empty() ? "" : ", ") + c;
    spdlog::info("the run in {} completed; --resume trains on with the settings changed: {}", run_dir.string(), listed);
    return std::nullopt;
  }
  const json& limit = summary.value("max_steps", json());
  if (limit.is_number_integer() && (!options.max_steps || *options.max_steps > limit.get<int64_t>())) {
    spdlog::info("the run in {} completed at its --max-steps {}; --resume trains on to {}", run_dir.string(),
                 limit.dump(), options.max_steps ? "step " + std::to_string(*options.max_steps) : "the end of its config");
    return std::nullopt;
  }
  return "the run in " + run_dir.string() + " completed (summary.json): nothing to resume, and nothing was " +
         "changed. To train it further, resume with more steps or epochs (--set total_timesteps=..., --set " +
         "epochs=...); to use it, --resume --command eval (or another command on a trained run)";
}

PlanOverrides overrides(const CliOptions& options) {
  PlanOverrides o;
  if (options.precision && *options.precision != "auto") o.precision = options.precision;
  o.batch_size = options.batch_size;
  o.batch_size_auto = options.batch_size_auto;
  if (options.allocator && *options.allocator != "auto") o.allocator = options.allocator;
  o.threads = options.threads;
  o.max_steps = options.max_steps;
  o.max_steps_from = options.max_steps_from;
  if (options.init_from) o.init_from = nlohmann::json{{"path", *options.init_from}, {"freeze", options.freeze}};
  return o;
}

// Who else runs here. MLH_MACHINE_SHARING=dedicated plans as if nothing else did (CI jobs
// and benchmarks that must plan the same way whatever runs beside them).
bool dedicated_machine() {
  const char* sharing = std::getenv("MLH_MACHINE_SHARING");
  if (sharing && std::string(sharing) == "dedicated") return true;
  if (sharing && *sharing && std::string(sharing) != "auto")
    throw HostError(std::string("MLH_MACHINE_SHARING='") + sharing + "': expected auto or dedicated", kExitBadInput);
  return false;
}

MachineShare machine_share(const Launch& launch, const RunRegistry* registry) {
  if (dedicated_machine()) return {};
  const std::string own_master =
      launch.external() ? launch.master_addr + ":" + std::to_string(launch.master_port) : std::string();
  // A tenth of a second tells a machine busy now from a quiet one (the run then loads LibTorch
  // for half a second anyway); runs entering the registry meanwhile are seen after it.
  return read_machine_share("/proc", ::getpid(), own_master, std::chrono::milliseconds(100), registry);
}

int planned_threads(const PlannedRun& planned) {
  const nlohmann::json& threads = planned.plan.value("threads", nlohmann::json());
  return threads.is_object() && threads.value("intra_op", nlohmann::json()).is_number_integer()
             ? threads["intra_op"].get<int>()
             : 1;
}

}  // namespace

const Device& chosen_device_or_refuse(const Ranking& ranking) {
  if (const Device* device = ranking.chosen_device()) return *device;
  if (ranking.requested)
    throw HostError("no device to run on: " + ranking.error +
                        " (see 'host --probe'; --device cpu runs on the CPU, --device auto on the best device there is)",
                    kExitBadInput);
  throw HostError("no device to run on: " + ranking.error + " (see 'host --probe')");
}

MeasurementPolicy measurement_policy(const CliOptions& options, MeasurementPolicy::Calibrate calibrate,
                                     const std::string& why_cached_only) {
  MeasurementPolicy policy;
  policy.calibrate = calibrate;
  policy.why_cached_only = why_cached_only;
  policy.seconds = options.calibration_seconds;
  policy.cache_file = calibration_cache_file();
  return policy;
}

RunSetup setup_run(const CliOptions& options, const Launch& launch, const MeasurementPolicy& measurement,
                   bool registers) {
  RunSetup s;
  s.discovery = discover_plugins(discovery_options(options));
  PlanRequest request;
  if (!options.algorithm.empty()) {
    s.algorithm = describe_algorithm(s.discovery.usable_algorithm(options.algorithm).manifest);
    s.run_dir = options.run_dir.empty() ? default_run_dir(s.algorithm->name()) : options.run_dir;
    s.resume = options.resume;
    if (options.resume_auto) {
      // Every launch of a preemptible job runs this same command. The ranks of one launch may
      // decide differently (rank 0 wrote config.json a moment before another looked), which
      // is safe: a rank resuming where no checkpoint exists yet starts from the beginning too.
      s.resume = holds_run(s.run_dir);
      spdlog::info("--resume auto: {} in {}", s.resume ? "continuing the run" : "starting a new run", s.run_dir.string());
    }
    const std::string command = options.command.empty() ? s.algorithm->default_command() : options.command;
    if (s.resume) {
      try {
        prepare_run_dir(s.run_dir, true, command != s.algorithm->default_command() ? command : "");
      } catch (const std::exception& e) {
        throw HostError(e.what(), kExitBadInput);
      }
      refuse_another_algorithm(s.run_dir, s.algorithm->name());
    }
    s.on_trained_run = s.resume && command != s.algorithm->default_command();
    request.algorithm = s.algorithm;
    request.command = options.command;
    request.run_dir = s.run_dir;
    request.on_trained_run = s.on_trained_run;
    request.user_config = user_config(options, s.resume, s.algorithm->config_schema, s.run_dir);
    if (s.resume && !s.on_trained_run && (s.complete = completed_run(s.run_dir, request.user_config, options)))
      return s;
    request.resume = s.resume;
    if (s.resume) request.config_set_now = user_config(options, false, s.algorithm->config_schema, s.run_dir);
    if (s.resume && !s.on_trained_run) {
      // Its last launch's plan: the values that change the run's numbers stay the run's.
      std::ifstream saved_plan(s.run_dir / "plan.json");
      const json saved = json::parse(saved_plan, nullptr, /*allow_exceptions=*/false);
      if (saved.is_object()) request.resumed_plan = saved;
    }
  }

  const std::vector<PluginManifest> algorithms =
      s.algorithm ? std::vector<PluginManifest>{s.algorithm->manifest} : s.discovery.usable("algorithm");
  s.probe = probe_and_rank(s.discovery, algorithms, options.device, options.no_gpu,
                           std::chrono::milliseconds(options.probe_timeout_ms));
  s.device = chosen_device_or_refuse(s.probe.ranking);

  const SettingsFileChoice settings_file =
      choose_settings_file(options.hardware_config, std::getenv("MLH_HARDWARE_CONFIG"), options.no_hardware_config,
                           SettingsSearch::from_environment());
  try {
    if (settings_file.file) request.settings = read_hardware_settings(*settings_file.file);
    request.rules = load_device_rules(default_share_dir() / "autoconfig.json", options.rules_file);
  } catch (const std::runtime_error& e) {  // SettingsError, RulesError
    throw HostError(e.what(), kExitBadInput);
  }
  request.settings_file_status = settings_file.status;
  request.device = s.device;
  request.ranking = s.probe.ranking;
  request.overrides = overrides(options);
  if (const char* path = std::getenv("MLH_ALLOCATOR_PATH")) request.allocators.path = path;
  request.measurement = measurement;
  request.launch = launch;
  // A run enters the registry before it looks, so that one started in the same moment sees
  // it (--print-plan only looks; distributed ranks share out their machine themselves).
  if (registers && !launch.distributed() && !dedicated_machine()) {
    s.registry = RunRegistry::open();
    if (s.registry) s.registry->enter(0);
  }
  request.sharing = machine_share(launch, s.registry.get());
  if (s.registry)
    for (const RegisteredRun& r : s.registry->others()) s.planned_beside.push_back(r.pid);

  s.settings = request.settings;
  WorkerPlanServices services(s.discovery);
  s.planned = plan_run(request, services);
  s.request = request;
  if (s.registry) s.registry->enter(planned_threads(s.planned));
  s.device = s.planned.device;
  s.probe.ranking = s.planned.ranking;
  for (const json& warning : s.planned.plan.value("warnings", json::array())) spdlog::warn("{}", warning.get<std::string>());
  return s;
}

void replan_if_joined(RunSetup& s, const Launch& launch) {
  if (!s.registry) return;
  bool joined = false;
  for (const RegisteredRun& r : s.registry->others())
    joined = joined || std::find(s.planned_beside.begin(), s.planned_beside.end(), r.pid) == s.planned_beside.end();
  if (!joined) return;
  s.request.sharing = machine_share(launch, s.registry.get());
  s.planned_beside.clear();
  for (const RegisteredRun& r : s.registry->others()) s.planned_beside.push_back(r.pid);
  // The measurements are cached or were skipped by now (the machine is shared): planning
  // again only redoes the arithmetic.
  s.request.measurement.calibrate = MeasurementPolicy::Calibrate::kCachedOnly;
  s.request.measurement.why_cached_only = "another run started beside this one while it planned";
  s.request.measurement.may_search_batch = false;
  WorkerPlanServices services(s.discovery);
  const int before = planned_threads(s.planned);
  s.planned = plan_run(s.request, services);
  s.registry->enter(planned_threads(s.planned));
  spdlog::info("another run started here while this one planned: planned again beside it ({} intra-op threads, "
               "were {})",
               planned_threads(s.planned), before);
}

}  // namespace mlhost
