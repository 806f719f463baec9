#include "cli/cli.hpp"

#include "cli/option_table.hpp"
#include "common/stop_request.hpp"
#include "probe/torch_backend.hpp"

#include <mlh/plan_setting_check.hpp>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

namespace mlhost {

namespace {

using Action = CliOptions::Action;
// An action the command line asks for, with the option that asked (for the messages).
using RequestedAction = std::pair<Action, const char*>;

std::vector<const char*> c_strings(const std::vector<std::string>& args) {
  std::vector<const char*> pointers;
  for (const std::string& a : args) pointers.push_back(a.c_str());
  return pointers;
}

// "--resume auto" as "--resume=auto": Boost takes an option's optional value only from the
// same token.
std::vector<std::string> join_resume_auto(int argc, const char* const* argv) {
  std::vector<std::string> args(argv, argv + argc);
  for (size_t i = 1; i + 1 < args.size(); ++i)
    if (args[i] == "--resume" && args[i + 1] == "auto") {
      args[i] = "--resume=auto";
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    }
  return args;
}

// Boost fills the %placeholders% of its messages with the arguments as typed and loops
// forever when an argument holds one itself ("--x%canonical_option%"): take the message from
// a copy with every '%' swapped for a stand-in, then put the '%' back.
std::string boost_error_message(std::vector<std::string> args, const po::options_description& all) {
  for (auto& a : args) std::replace(a.begin(), a.end(), '%', '\x1f');
  const std::vector<const char*> safe_argv = c_strings(args);
  std::string message = "invalid command line";
  try {
    po::variables_map unused;
    po::store(po::command_line_parser(static_cast<int>(safe_argv.size()), safe_argv.data()).options(all).run(),
              unused);
    po::notify(unused);
  } catch (const po::error& e) {
    message = e.what();
  }
  std::replace(message.begin(), message.end(), '\x1f', '%');
  return message;
}

// The command line as Boost reads it; notify() also fills the fields the options are bound to.
po::variables_map read_command_line(const std::vector<std::string>& args, const po::options_description& all) {
  const std::vector<const char*> argv = c_strings(args);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(static_cast<int>(argv.size()), argv.data()).options(all).run(), vm);
    po::notify(vm);
  } catch (const po::error&) {
    throw CliError(boost_error_message(args, all));
  }
  return vm;
}

// The text as a whole number in [min, max], or nothing when it is not one.
std::optional<long long> whole_number(const std::string& text, long long min, long long max) {
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || n < min || n > max) return std::nullopt;
  return n;
}

// Logging, probing and the device request: what every action uses.
void read_general_options(CliOptions& o, const po::variables_map& vm, const CliRawValues& raw) {
  static const std::vector<std::string> levels = {"trace", "debug", "info", "warn", "error", "off"};
  if (std::find(levels.begin(), levels.end(), o.log_level) == levels.end())
    throw CliError("--log-level '" + o.log_level + "' is not one of trace, debug, info, warn, error, off");
  if (o.probe_timeout_ms <= 0) throw CliError("--probe-timeout must be a positive number of milliseconds");
  try {
    o.device = DeviceRequest::parse(raw.device);
  } catch (const std::invalid_argument& e) {
    throw CliError(e.what());
  }
  o.json = vm.count("json") > 0;
  o.no_gpu = vm.count("no-gpu") > 0;
}

// What a run runs and where it keeps its outputs: --resume, --benchmark, --config, --set, --run-dir.
void read_run_selection(CliOptions& o, const po::variables_map& vm, const CliRawValues& raw) {
  if (vm.count("resume")) {
    if (raw.resume_mode != "yes" && raw.resume_mode != "auto")
      throw CliError("--resume takes no value, or 'auto'; got '" + raw.resume_mode + "'");
    o.resume = raw.resume_mode == "yes";
    o.resume_auto = raw.resume_mode == "auto";
  }
  o.benchmark = vm.count("benchmark") > 0;
  if (vm.count("config")) o.config_file = vm["config"].as<std::string>();
  if (vm.count("set")) o.sets = vm["set"].as<std::vector<std::string>>();
  if (vm.count("run-dir")) o.run_dir = vm["run-dir"].as<std::string>();
}

// Where the host looks for plugins and which of them it trusts.
void read_plugin_search(CliOptions& o, const po::variables_map& vm) {
  o.no_default_plugin_dir = vm.count("no-default-plugin-dir") > 0;
  o.allow_unsafe_plugins = vm.count("allow-unsafe-plugins") > 0;
  if (vm.count("plugin-dir"))
    for (const auto& d : vm["plugin-dir"].as<std::vector<std::string>>()) {
      if (d.empty()) throw CliError("--plugin-dir needs a folder");
      o.plugin_dirs.emplace_back(d);
    }
  if (vm.count("plugin-allowlist")) {
    o.plugin_allowlist = vm["plugin-allowlist"].as<std::string>();
    if (o.plugin_allowlist.empty()) throw CliError("--plugin-allowlist needs a file");
  }
}

// The plan's values the user sets by hand: --precision, --batch-size, --threads, --allocator.
void read_plan_overrides(CliOptions& o, const po::variables_map& vm, const CliRawValues& raw) {
  // Each value is checked by the plan's table, as the settings file's are.
  auto check = [](const char* option, const char* setting, const std::string& value, bool or_auto = true) {
    const std::string problem = mlh::plan_setting_problem(setting, value, or_auto);
    if (!problem.empty()) throw CliError(std::string("--") + option + " '" + value + "' " + problem);
  };
  if (vm.count("precision")) {
    check("precision", "precision", raw.precision);
    o.precision = raw.precision;
  }
  if (vm.count("batch-size")) {
    if (raw.batch_size == "auto") {
      o.batch_size_auto = true;
    } else if (const auto n = whole_number(raw.batch_size, 1, LLONG_MAX)) {
      o.batch_size = *n;
    } else {
      throw CliError("--batch-size must be a whole number of at least 1 or auto, got '" + raw.batch_size + "'");
    }
  }
  if (vm.count("threads")) {
    check("threads", "intra_op_threads", raw.threads, /*or_auto=*/false);
    o.threads = std::stoll(raw.threads);
  }
  if (vm.count("allocator")) {
    check("allocator", "allocator", raw.allocator);
    o.allocator = raw.allocator;
  }
}

// --max-steps, or MLH_MAX_STEPS in its place: MLH_MAX_STEPS stands in for it on runs of an
// algorithm (the docs test runs every documented training command short with it); elsewhere
// it is ignored.
void read_max_steps(CliOptions& o, const po::variables_map& vm, std::string max_steps) {
  std::string max_steps_from = "--max-steps";
  if (!vm.count("max-steps") && vm.count("algorithm"))
    if (const char* env = std::getenv("MLH_MAX_STEPS"); env && *env) {
      max_steps = env;
      max_steps_from = "MLH_MAX_STEPS";
    }
  if (!vm.count("max-steps") && max_steps_from != "MLH_MAX_STEPS") return;
  const auto n = whole_number(max_steps, 1, INT32_MAX);
  if (!n)
    throw CliError(max_steps_from + " must be a whole number from 1 to " + std::to_string(INT32_MAX) + ", got '" +
                   max_steps + "'");
  o.max_steps = *n;
  o.max_steps_from = max_steps_from;
}

// --init-from and --freeze: the weights training starts from, and which of them stay fixed.
void read_init_weights(CliOptions& o, const po::variables_map& vm) {
  if (vm.count("init-from")) {
    const std::string path = vm["init-from"].as<std::string>();
    std::error_code ec;
    if (path.empty() || !std::filesystem::is_regular_file(path, ec))
      throw CliError("--init-from '" + path + "': no such file");
    o.init_from = std::filesystem::absolute(path).lexically_normal().string();
  }
  if (vm.count("freeze")) {
    if (!o.init_from) throw CliError("--freeze needs --init-from (it freezes weights loaded from a file)");
    for (const std::string& list : vm["freeze"].as<std::vector<std::string>>()) {
      std::stringstream names(list);
      for (std::string name; std::getline(names, name, ',');) {
        if (name.empty()) throw CliError("--freeze '" + list + "': an empty parameter name");
        o.freeze.push_back(name);
      }
    }
  }
}

// --preempt-signal, else $MLH_PREEMPT_SIGNAL: the signal a job scheduler sends before it
// preempts the job.
void read_preempt_signal(CliOptions& o, const po::variables_map& vm, std::string preempt_signal) {
  if (!vm.count("preempt-signal"))
    if (const char* env = std::getenv("MLH_PREEMPT_SIGNAL"); env && *env) preempt_signal = env;
  if (preempt_signal.empty()) return;
  o.preempt_signal = parse_signal(preempt_signal);
  if (o.preempt_signal == 0)
    throw CliError("--preempt-signal '" + preempt_signal +
                   "' is not a signal a job can be sent to preempt it (e.g. USR1, USR2, TERM, HUP, QUIT, ALRM, XCPU)");
}

// Where the plan's settings come from: calibration, the hardware settings file, the rules.
void read_plan_sources(CliOptions& o, const po::variables_map& vm) {
  o.no_calibrate = vm.count("no-calibrate") > 0;
  if (o.calibration_seconds < 1)
    throw CliError("--calibration-seconds must be at least 1, got " + std::to_string(o.calibration_seconds));
  if (vm.count("hardware-config")) o.hardware_config = vm["hardware-config"].as<std::string>();
  o.no_hardware_config = vm.count("no-hardware-config") > 0;
  if (o.no_hardware_config && vm.count("hardware-config"))
    throw CliError("--no-hardware-config cannot be combined with --hardware-config");
  if (vm.count("rules")) o.rules_file = vm["rules"].as<std::string>();
  o.print_plan = vm.count("print-plan") > 0;
  if (const TorchBackend* b = find_torch_backend(o.device.kind);
      o.no_gpu && ((b && b->accelerator) || o.device.kind == DeviceRequest::kAnyGpu))
    throw CliError("--no-gpu contradicts --device " + o.device.str());
}

// Every action the command line asks for, in the order of precedence: only --help may come
// with another.
std::vector<RequestedAction> requested_actions(const CliOptions& o, const po::variables_map& vm) {
  std::vector<RequestedAction> actions;
  if (vm.count("help")) actions.push_back({Action::kHelp, "--help"});
  if (vm.count("version")) actions.push_back({Action::kVersion, "--version"});
  if (vm.count("probe")) actions.push_back({Action::kProbe, "--probe"});
  if (vm.count("list-plugins")) actions.push_back({Action::kListPlugins, "--list-plugins"});
  if (vm.count("describe")) actions.push_back({Action::kDescribe, "--describe"});
  const bool calibrate = vm.count("calibrate") > 0;
  if (calibrate) actions.push_back({Action::kCalibrate, "--calibrate"});
  const bool sweeping = vm.count("sweep") || vm.count("seeds");
  if (vm.count("algorithm") && !o.print_plan && !calibrate)
    actions.push_back({sweeping ? Action::kSweep : Action::kRun, "--algorithm"});
  if (o.print_plan) actions.push_back({Action::kPrintPlan, "--print-plan"});
  if (vm.count("sync-tracking")) actions.push_back({Action::kSyncTracking, "--sync-tracking"});
  if (actions.size() > 1 && actions[0].first != Action::kHelp)
    throw CliError(std::string(actions[0].second) + " and " + actions[1].second + " cannot be used together");
  return actions;
}

bool runs_algorithm(const CliOptions& o) { return o.action == Action::kRun || o.action == Action::kSweep; }

// The sweep options: a sweep's trials are single-process training runs, and the sweep options
// mean nothing without a sweep.
void read_sweep(CliOptions& o, const po::variables_map& vm, const CliRawValues& raw) {
  if (o.action == Action::kSweep) {
    if (vm.count("sweep")) o.sweep = vm["sweep"].as<std::vector<std::string>>();
    for (const char* opt : {"benchmark", "nproc-per-node", "nnodes", "node-rank", "master-addr", "master-port", "max-restarts"})
      if (vm.count(opt) && !vm[opt].defaulted()) throw CliError(std::string("--") + opt + " cannot be combined with a sweep (--sweep, --seeds): "
                                        "a sweep's trials are single-process runs");
    if (!o.command.empty()) throw CliError("--command cannot be combined with a sweep: a sweep's trials train");
    if (vm.count("sweep-random") && o.sweep_random < 1)
      throw CliError("--sweep-random must be at least 1, got " + std::to_string(o.sweep_random));
  } else {
    for (const char* opt : {"sweep", "seeds"})
      if (vm.count(opt)) throw CliError(std::string("--") + opt + " only applies with --algorithm (a sweep of training runs)");
    for (const char* opt : {"sweep-random", "sweep-parallel"})
      if (vm.count(opt)) throw CliError(std::string("--") + opt + " only applies with --algorithm and --sweep or --seeds");
  }
  if (vm.count("sweep-parallel") && raw.sweep_parallel != "auto") {
    const auto n = whole_number(raw.sweep_parallel, 1, 1024);
    if (!n)
      throw CliError("--sweep-parallel must be auto or a whole number from 1 to 1024, got '" + raw.sweep_parallel + "'");
    o.sweep_parallel = static_cast<int>(*n);
  }
}

// Run options given to an action that starts no run, and plan options given to one that plans
// nothing: refused rather than ignored. `action` is the option that chose the action.
void check_options_fit_action(const CliOptions& o, const po::variables_map& vm, const std::string& action) {
  const bool running = runs_algorithm(o);
  const bool planning_action = running || o.action == Action::kCalibrate || o.action == Action::kPrintPlan;
  if (!running) {
    // --print-plan --algorithm X --command eval: the plan of that command (what it uses of it).
    if (vm.count("command") && !(o.action == Action::kPrintPlan && !o.algorithm.empty()))
      throw CliError("--command only applies with --algorithm");
    for (const char* opt : {"run-dir", "resume", "benchmark", "nnodes", "node-rank", "master-addr", "master-port",
                            "preempt-signal"}) {
      if (!vm.count(opt)) continue;
      if (o.algorithm.empty()) throw CliError(std::string("--") + opt + " only applies with --algorithm");
      // --calibrate or --print-plan with --algorithm: they plan for a config, not for a run.
      throw CliError(std::string("--") + opt + " applies to a run, not to " + action +
                     (std::string(opt) == "run-dir" || std::string(opt) == "resume"
                          ? " (which uses no run folder): for a run's settings, give --config RUN_DIR/config.json"
                          : " (drop " + action + " to run)"));
    }
  }
  if (!planning_action) {
    for (const char* opt : {"config", "set", "precision", "batch-size", "hardware-config", "rules", "nproc-per-node",
                            "allocator", "threads", "no-calibrate", "max-steps"})
      if (vm.count(opt)) throw CliError(std::string("--") + opt + " only applies with --algorithm or --print-plan");
  }
}

// --track, --sync-tracking and --mlflow-experiment, each only where a run or a sync uses it.
void read_tracking(CliOptions& o, const po::variables_map& vm) {
  const bool running = runs_algorithm(o);
  if (vm.count("track")) {
    if (!running) throw CliError("--track only applies with --algorithm");
    if (o.track != "mlflow" && o.track != "none")
      throw CliError("--track '" + o.track + "' is not a tracker this host knows (mlflow, or none)");
  }
  if (o.action == Action::kSyncTracking) {
    o.sync_tracking_dir = vm["sync-tracking"].as<std::string>();
    if (o.sync_tracking_dir.empty()) throw CliError("--sync-tracking needs a run folder");
  }
  if (vm.count("mlflow-experiment") && !running && o.action != Action::kSyncTracking)
    throw CliError("--mlflow-experiment only applies with --algorithm or --sync-tracking");
  if (vm.count("mlflow-experiment") && o.mlflow_experiment.empty())
    throw CliError("--mlflow-experiment needs a name");
}

// Options that contradict each other or the action, and the output format: --benchmark picks
// the command, --json and --format the format.
void check_action_combinations(CliOptions& o, const po::variables_map& vm) {
  if (o.action == Action::kCalibrate && (o.no_calibrate || vm.count("nproc-per-node")))
    throw CliError(std::string("--calibrate cannot be combined with ") + (o.no_calibrate ? "--no-calibrate" : "--nproc-per-node"));
  if (o.action == Action::kPrintPlan && o.algorithm.empty() && (vm.count("config") || vm.count("set")))
    throw CliError("--config and --set need --algorithm (they configure an algorithm)");
  if (o.benchmark) {
    if (!o.command.empty() && o.command != "benchmark")
      throw CliError("--benchmark runs the 'benchmark' command; it cannot be combined with --command " + o.command);
    o.command = "benchmark";
  }
  if (vm.count("format")) {
    if (o.action != Action::kDescribe) throw CliError("--format only applies with --describe");
    if (o.describe_format != "text" && o.describe_format != "json" && o.describe_format != "markdown")
      throw CliError("--format '" + o.describe_format + "' is not one of text, json, markdown");
    if (o.json && o.describe_format != "json") throw CliError("--json and --format " + o.describe_format + " disagree");
  }
  if (o.json && o.action == Action::kDescribe) o.describe_format = "json";
  if (o.json && o.action != Action::kProbe && o.action != Action::kListPlugins && o.action != Action::kDescribe &&
      !o.benchmark)
    throw CliError("--json only applies with --probe, --list-plugins, --describe or --benchmark");
  if ((o.resume || o.resume_auto) && o.run_dir.empty())
    throw CliError(std::string("--resume") + (o.resume_auto ? " auto" : "") + " needs --run-dir naming the run to continue");
}

// The ranks and their meeting point: counts in range, and what a launch over several machines
// cannot do without.
void check_distributed(const CliOptions& o, const po::variables_map& vm) {
  if (vm.count("nproc-per-node") && o.nproc_per_node < 1)
    throw CliError("--nproc-per-node must be at least 1, got " + std::to_string(o.nproc_per_node));
  if (vm.count("nnodes") && o.nnodes < 1) throw CliError("--nnodes must be at least 1, got " + std::to_string(o.nnodes));
  if (vm.count("node-rank") && (o.node_rank < 0 || o.node_rank >= std::max(o.nnodes, 1)))
    throw CliError("--node-rank " + std::to_string(o.node_rank) + " is outside 0.." + std::to_string(std::max(o.nnodes, 1) - 1) +
                   " (--nnodes " + std::to_string(std::max(o.nnodes, 1)) + ")");
  if (vm.count("master-port") && (o.master_port < 1 || o.master_port > 65535))
    throw CliError("--master-port must be from 1 to 65535, got " + std::to_string(o.master_port));
  if (o.max_restarts < 0) throw CliError("--max-restarts must be 0 or more, got " + std::to_string(o.max_restarts));
  if (o.dist_timeout_s < 1) throw CliError("--dist-timeout must be at least 1 second, got " + std::to_string(o.dist_timeout_s));
  if (vm.count("master-addr") && o.master_addr.empty()) throw CliError("--master-addr needs an address");
  if (o.nnodes > 1 && o.master_addr.empty())
    throw CliError("--nnodes " + std::to_string(o.nnodes) + " needs --master-addr (the address of node 0)");
  if (o.nnodes > 1 && !vm.count("node-rank")) throw CliError("--nnodes " + std::to_string(o.nnodes) + " needs --node-rank");
}

}  // namespace

// The steps run in this order because it decides which message a command line with several
// mistakes gets: the values one by one first, then the action, then how the options fit it.
CliOptions parse_cli(int argc, const char* const* argv) {
  CliOptions o;
  CliRawValues raw;
  const std::vector<std::string> args = join_resume_auto(argc, argv);
  const po::options_description all = declare_cli_options(o, raw);
  o.help = cli_help_text(all);
  const po::variables_map vm = read_command_line(args, all);

  read_general_options(o, vm, raw);
  read_run_selection(o, vm, raw);
  read_plugin_search(o, vm);
  read_plan_overrides(o, vm, raw);
  read_max_steps(o, vm, raw.max_steps);
  read_init_weights(o, vm);
  read_preempt_signal(o, vm, raw.preempt_signal);
  read_plan_sources(o, vm);

  const std::vector<RequestedAction> actions = requested_actions(o, vm);
  if (actions.empty()) {
    if (args.size() > 1)
      throw CliError("nothing to do: give --probe, --list-plugins, --describe NAME, --algorithm NAME or --sync-tracking RUN_DIR");
    return o;  // bare `host`: help
  }
  o.action = actions[0].first;

  read_sweep(o, vm, raw);
  check_options_fit_action(o, vm, actions[0].second);
  read_tracking(o, vm);
  check_action_combinations(o, vm);
  check_distributed(o, vm);
  return o;
}

}  // namespace mlhost
