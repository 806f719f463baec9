#include "cli/cli.hpp"

#include "common/stop_request.hpp"
#include "probe/torch_backend.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <sstream>
#include <vector>

#include <boost/program_options.hpp>

namespace mlhost {

namespace po = boost::program_options;

namespace {

const char* kUsage =
    "Usage: host [options]\n"
    "  host --probe [--json]                    what devices this machine has, and which is chosen\n"
    "  host --list-plugins [--json]             the plugins found (manifests only, nothing loaded)\n"
    "  host --describe NAME [--json]            an algorithm's commands, presets and config fields\n"
    "  host --describe NAME --format markdown   its config reference: every field, default and meaning\n"
    "  host --algorithm NAME [--command train] [--config FILE] [--set key=value]... [--run-dir DIR] [--resume]\n"
    "  host --algorithm NAME --benchmark [--json]  the algorithm's benchmarks on the chosen device\n"
    "  host --print-plan [--algorithm NAME] [--precision P] [--batch-size N] [--hardware-config FILE]\n"
    "  host --calibrate [--algorithm NAME]      measure the plan's allocator, threads and precision here\n"
    "  host --algorithm NAME --nproc-per-node N [--nnodes M --node-rank R --master-addr A]  data-parallel ranks\n"
    "  host --algorithm NAME --track mlflow     also send the run to $MLFLOW_TRACKING_URI (MLflow)\n"
    "  host --sync-tracking RUN_DIR             send a run folder's data the tracking server has not got yet\n"
    "  host --algorithm NAME --sweep KEY=V1,V2 [--seeds N] [--run-dir DIR] [--resume]  a grid of runs (or\n"
    "                                           --sweep KEY=loguniform(A,B) --sweep-random N), with a summary table\n";

}  // namespace

CliOptions parse_cli(int argc, const char* const* argv) {
  CliOptions o;
  std::string device = "auto", resume_mode, preempt_signal;
  // "--resume auto" as "--resume=auto": Boost takes an option's optional value only from the
  // same token.
  std::vector<std::string> merged(argv, argv + argc);
  for (size_t i = 1; i + 1 < merged.size(); ++i)
    if (merged[i] == "--resume" && merged[i + 1] == "auto") {
      merged[i] = "--resume=auto";
      merged.erase(merged.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    }
  std::vector<const char*> merged_argv;
  for (const std::string& a : merged) merged_argv.push_back(a.c_str());
  argc = static_cast<int>(merged_argv.size());
  argv = merged_argv.data();

  po::options_description general("General");
  general.add_options()
      ("help,h", "show this help and exit")
      ("version", "show the version and exit")
      ("log-level", po::value(&o.log_level)->default_value("info"),
       "trace, debug, info, warn, error or off");
  po::options_description plugins("Plugins and devices");
  plugins.add_options()
      ("probe", "probe every device plugin, rank the devices and show the choice")
      ("json", "with --probe, --list-plugins, --describe or --benchmark: print JSON (probe schema: docs/probe-json.md)")
      ("list-plugins", "list the plugins found in the search path (no plugin code is loaded)")
      ("plugin-dir", po::value<std::vector<std::string>>()->composing(),
       "search this folder for plugins first (repeatable); MLH_PLUGIN_PATH adds more")
      ("no-default-plugin-dir", "do not search the host's own plugin folder")
      ("allow-unsafe-plugins", "load plugins from files or folders other users can write to or own")
      ("plugin-allowlist", po::value<std::string>(),
       "load only plugins whose library's SHA-256 this file lists ('<sha256>  <name>' lines); "
       "default: $MLH_PLUGIN_ALLOWLIST")
      ("device", po::value(&device)->default_value("auto"), "auto, cpu, cuda, cuda:N, mps")
      ("no-gpu", "never choose a GPU")
      ("probe-timeout", po::value(&o.probe_timeout_ms)->default_value(10000),
       "milliseconds a device plugin may take to probe before it is killed");
  po::options_description run("Running an algorithm");
  run.add_options()
      ("describe", po::value(&o.describe),
       "describe the algorithm plugin NAME: its commands, presets and config fields with their defaults and "
       "meanings (--json: the schema, defaults and presets as JSON)")
      ("format", po::value(&o.describe_format)->value_name("text|json|markdown"),
       "with --describe: text (default), json (as --json), or markdown: the algorithm's config reference (every "
       "field with its type, default, allowed values, unit and meaning)")
      ("algorithm", po::value(&o.algorithm), "the algorithm plugin to run")
      ("command", po::value(&o.command), "what to run (default: the algorithm's first command, e.g. train)")
      ("config", po::value<std::string>(), "JSON file with config values")
      ("set", po::value<std::vector<std::string>>()->composing(),
       "key=value config override (repeatable; dotted keys; wins over --config)")
      ("run-dir", po::value<std::string>(), "folder for this run's outputs (default runs/<algorithm>-<time>)")
      ("resume", po::value(&resume_mode)->implicit_value("yes")->value_name("auto"),
       "continue the run in --run-dir from its newest checkpoint; '--resume auto': continue it if the folder "
       "holds a run, else start one there (the same command for every launch of a preemptible job)")
      ("preempt-signal", po::value(&preempt_signal),
       "a signal that preempts the run as SIGTERM does (e.g. USR1, for SLURM's --signal=USR1@120): every rank "
       "saves a checkpoint at its next step and the host exits 75; default $MLH_PREEMPT_SIGNAL")
      ("benchmark", "run the algorithm's benchmark command on the chosen device and print a table (--json: JSON)");
  po::options_description tracking("Experiment tracking (MLflow's REST API; docs/tracking.md)");
  tracking.add_options()
      ("track", po::value(&o.track)->value_name("mlflow"),
       "send the run's params, metrics, tags and artifacts to the MLflow tracking server $MLFLOW_TRACKING_URI "
       "while it trains (auth: $MLFLOW_TRACKING_TOKEN, or $MLFLOW_TRACKING_USERNAME and $MLFLOW_TRACKING_PASSWORD); "
       "a server that is down or refuses costs the run nothing: the folder keeps the data; default: the settings "
       "file's track key; --track none: no tracking")
      ("mlflow-experiment", po::value(&o.mlflow_experiment)->value_name("NAME"),
       "the MLflow experiment (made if missing); default $MLFLOW_EXPERIMENT_NAME, else $MLFLOW_EXPERIMENT_ID, "
       "else MLflow's Default")
      ("sync-tracking", po::value<std::string>()->value_name("RUN_DIR"),
       "send the run folder's params, metrics, artifacts and end status that the tracking server has not got "
       "yet (after a run whose server was down, or a run without --track)");
  po::options_description sweeps("Sweeps and seeds (docs/tracking.md)");
  std::string sweep_parallel;
  sweeps.add_options()
      ("sweep", po::value<std::vector<std::string>>()->composing()->value_name("KEY=VALUES"),
       "run a trial for each value (repeatable: a grid over every combination): lr=0.1,0.01; with --sweep-random "
       "also a distribution: lr=loguniform(1e-4,1e-1), dropout=uniform(0,0.5), width=randint(32,256); each trial "
       "is a run folder inside --run-dir")
      ("sweep-random", po::value(&o.sweep_random)->value_name("N"),
       "N trials drawn at random from the --sweep values and distributions instead of the grid")
      ("seeds", po::value(&o.seeds)->value_name("N"),
       "run every configuration with the seeds 1 to N (or a list: 0,7,42) and give each metric's mean and 95% "
       "interval over them")
      ("sweep-parallel", po::value(&sweep_parallel)->value_name("N"),
       "trials at once: auto (default: one per GPU of the chosen kind, one on a CPU, whose run takes every core) or N");
  std::string precision, allocator, batch_size, max_steps, threads;
  po::options_description planning("Planning (docs/plan.md)");
  planning.add_options()
      ("precision", po::value(&precision), "auto, fp32, fp16 or bf16 (default: auto, or the settings file)")
      ("batch-size", po::value(&batch_size),
       "reference batch size, or auto: the largest that fits, found by trying real training steps "
       "(default: the rules for the device)")
      ("hardware-config", po::value<std::string>(), "INI settings file (see share/mlhost/hardware.ini); "
                                                    "default: $MLH_HARDWARE_CONFIG, else the first of ./mlhost.ini, "
                                                    "~/.config/mlhost/hardware.ini, /etc/mlhost/hardware.ini")
      ("no-hardware-config", "read no hardware settings file, not even one found in those places")
      ("rules", po::value<std::string>(), "JSON file of auto-configuration rules tried before the shipped ones")
      ("print-plan", "show the plan for the chosen device (and --algorithm), run nothing")
      ("threads", po::value(&threads)->value_name("N"),
       "the worker's intra-op threads (LibTorch, OpenMP, BLAS) (default: the settings file's intra_op_threads, "
       "else calibrated, else the device plugin's recommendation, else all online CPUs)")
      ("allocator", po::value(&allocator),
       "the worker's memory allocator: auto, glibc, glibc-tuned, jemalloc or tcmalloc (default: calibrated, "
       "else jemalloc)")
      ("calibrate", "measure the algorithm's training speed here under candidate allocators, thread counts and "
                    "precisions, cache the fastest per machine and algorithm (all algorithms without --algorithm)")
      ("no-calibrate", "run with cached or default settings; never calibrate first")
      ("calibration-seconds", po::value(&o.calibration_seconds)->default_value(60),
       "the most seconds a calibration may take")
      ("max-steps", po::value(&max_steps),
       "end training after N steps of its loop (optimizer steps; PPO: iterations, ProtoNet: episodes), "
       "validating and saving as at a normal end: a smoke test of a plugin or a config")
      ("init-from", po::value<std::string>(),
       "start training from these weights: a run's model.safetensors or checkpoints/*.ckpt, or what PyTorch's "
       "torch.save wrote (a state dict or a whole module; names may carry one prefix more, e.g. '_orig_mod.'); "
       "shapes are checked per tensor")
      ("freeze", po::value<std::vector<std::string>>()->composing(),
       "with --init-from: parameters not to train, by name, dotted prefix ('encoder' freezes 'encoder.0.weight') "
       "or glob; comma-separated or repeated");
  po::options_description distributed("Distributed data-parallel training (torchrun's options)");
  distributed.add_options()
      ("nproc-per-node", po::value(&o.nproc_per_node), "worker processes (ranks) to start on this machine")
      ("nnodes", po::value(&o.nnodes), "machines taking part (each runs host with the same options)")
      ("node-rank", po::value(&o.node_rank), "this machine's place among them, 0 to nnodes-1")
      ("master-addr", po::value(&o.master_addr), "address of node 0, where the ranks meet (default 127.0.0.1 on one machine)")
      ("master-port", po::value(&o.master_port), "its TCP port (default: a free port on one machine, else 29500)")
      ("dist-timeout", po::value(&o.dist_timeout_s)->default_value(300),
       "seconds a rank waits for the others (rendezvous, collectives) before it fails")
      ("max-restarts", po::value(&o.max_restarts)->default_value(0),
       "when a worker this host started crashes, is killed or fails, stop the others and start them all again "
       "from the last checkpoint, up to N times (give every machine the same N)");
  po::options_description all;
  all.add(general).add(plugins).add(run).add(tracking).add(sweeps).add(planning).add(distributed);

  std::ostringstream help;
  help << kUsage << "\n" << all;
  o.help = help.str();

  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).run(), vm);
    po::notify(vm);
  } catch (const po::error&) {
    // Boost fills the %placeholders% of its messages with the arguments as typed and loops
    // forever when an argument holds one itself ("--x%canonical_option%"): take the message
    // from a copy with every '%' swapped for a stand-in, then put the '%' back.
    std::vector<std::string> safe(argv, argv + argc);
    for (auto& a : safe) std::replace(a.begin(), a.end(), '%', '\x1f');
    std::vector<const char*> safe_argv;
    for (const auto& a : safe) safe_argv.push_back(a.c_str());
    std::string message = "invalid command line";
    try {
      po::variables_map unused;
      po::store(po::command_line_parser(argc, safe_argv.data()).options(all).run(), unused);
      po::notify(unused);
    } catch (const po::error& e) {
      message = e.what();
    }
    std::replace(message.begin(), message.end(), '\x1f', '%');
    throw CliError(message);
  }

  static const std::vector<std::string> levels = {"trace", "debug", "info", "warn", "error", "off"};
  if (std::find(levels.begin(), levels.end(), o.log_level) == levels.end())
    throw CliError("--log-level '" + o.log_level + "' is not one of trace, debug, info, warn, error, off");
  if (o.probe_timeout_ms <= 0) throw CliError("--probe-timeout must be a positive number of milliseconds");
  try {
    o.device = DeviceRequest::parse(device);
  } catch (const std::invalid_argument& e) {
    throw CliError(e.what());
  }
  o.json = vm.count("json") > 0;
  o.no_gpu = vm.count("no-gpu") > 0;
  o.no_default_plugin_dir = vm.count("no-default-plugin-dir") > 0;
  o.allow_unsafe_plugins = vm.count("allow-unsafe-plugins") > 0;
  if (vm.count("resume")) {
    if (resume_mode != "yes" && resume_mode != "auto")
      throw CliError("--resume takes no value, or 'auto'; got '" + resume_mode + "'");
    o.resume = resume_mode == "yes";
    o.resume_auto = resume_mode == "auto";
  }
  o.benchmark = vm.count("benchmark") > 0;
  if (vm.count("plugin-dir"))
    for (const auto& d : vm["plugin-dir"].as<std::vector<std::string>>()) {
      if (d.empty()) throw CliError("--plugin-dir needs a folder");
      o.plugin_dirs.emplace_back(d);
    }
  if (vm.count("plugin-allowlist")) {
    o.plugin_allowlist = vm["plugin-allowlist"].as<std::string>();
    if (o.plugin_allowlist.empty()) throw CliError("--plugin-allowlist needs a file");
  }
  if (vm.count("config")) o.config_file = vm["config"].as<std::string>();
  if (vm.count("set")) o.sets = vm["set"].as<std::vector<std::string>>();
  if (vm.count("run-dir")) o.run_dir = vm["run-dir"].as<std::string>();
  if (vm.count("precision")) {
    if (precision != "auto" && precision != "fp32" && precision != "fp16" && precision != "bf16")
      throw CliError("--precision '" + precision + "' is not one of auto, fp32, fp16, bf16");
    o.precision = precision;
  }
  if (vm.count("batch-size")) {
    if (batch_size == "auto") {
      o.batch_size_auto = true;
    } else {
      char* end = nullptr;
      errno = 0;
      const long long n = std::strtoll(batch_size.c_str(), &end, 10);
      if (batch_size.empty() || *end != '\0' || errno != 0 || n < 1)
        throw CliError("--batch-size must be a whole number of at least 1 or auto, got '" + batch_size + "'");
      o.batch_size = n;
    }
  }
  if (vm.count("threads")) {
    char* end = nullptr;
    errno = 0;
    const long long n = std::strtoll(threads.c_str(), &end, 10);
    if (threads.empty() || *end != '\0' || errno != 0 || n < 1 || n > 4096)
      throw CliError("--threads must be a whole number from 1 to 4096, got '" + threads + "'");
    o.threads = n;
  }
  if (vm.count("allocator")) {
    static const std::vector<std::string> allocators = {"auto", "glibc", "glibc-tuned", "jemalloc", "tcmalloc"};
    if (std::find(allocators.begin(), allocators.end(), allocator) == allocators.end())
      throw CliError("--allocator '" + allocator + "' is not one of auto, glibc, glibc-tuned, jemalloc, tcmalloc");
    o.allocator = allocator;
  }
  // MLH_MAX_STEPS stands in for --max-steps on runs of an algorithm (the docs test runs every
  // documented training command short with it); elsewhere it is ignored.
  std::string max_steps_from = "--max-steps";
  if (!vm.count("max-steps") && vm.count("algorithm"))
    if (const char* env = std::getenv("MLH_MAX_STEPS"); env && *env) {
      max_steps = env;
      max_steps_from = "MLH_MAX_STEPS";
    }
  if (vm.count("max-steps") || max_steps_from == "MLH_MAX_STEPS") {
    char* end = nullptr;
    errno = 0;
    const long long n = std::strtoll(max_steps.c_str(), &end, 10);
    if (max_steps.empty() || *end != '\0' || errno != 0 || n < 1 || n > INT32_MAX)
      throw CliError(max_steps_from + " must be a whole number from 1 to " + std::to_string(INT32_MAX) + ", got '" +
                     max_steps + "'");
    o.max_steps = n;
    o.max_steps_from = max_steps_from;
  }
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
  if (!vm.count("preempt-signal"))
    if (const char* env = std::getenv("MLH_PREEMPT_SIGNAL"); env && *env) preempt_signal = env;
  if (!preempt_signal.empty()) {
    o.preempt_signal = parse_signal(preempt_signal);
    if (o.preempt_signal == 0)
      throw CliError("--preempt-signal '" + preempt_signal +
                     "' is not a signal a job can be sent to preempt it (e.g. USR1, USR2, TERM, HUP, QUIT, ALRM, XCPU)");
  }
  o.no_calibrate = vm.count("no-calibrate") > 0;
  if (o.calibration_seconds < 1)
    throw CliError("--calibration-seconds must be at least 1, got " + std::to_string(o.calibration_seconds));
  if (vm.count("hardware-config")) o.hardware_config = vm["hardware-config"].as<std::string>();
  o.no_hardware_config = vm.count("no-hardware-config") > 0;
  if (o.no_hardware_config && vm.count("hardware-config"))
    throw CliError("--no-hardware-config cannot be combined with --hardware-config");
  if (vm.count("rules")) o.rules_file = vm["rules"].as<std::string>();
  o.print_plan = vm.count("print-plan") > 0;
  if (const TorchBackend* b = find_torch_backend(o.device.kind); o.no_gpu && b && b->accelerator)
    throw CliError("--no-gpu contradicts --device " + o.device.str());

  std::vector<std::pair<CliOptions::Action, const char*>> actions;
  if (vm.count("help")) actions.push_back({CliOptions::Action::kHelp, "--help"});
  if (vm.count("version")) actions.push_back({CliOptions::Action::kVersion, "--version"});
  if (vm.count("probe")) actions.push_back({CliOptions::Action::kProbe, "--probe"});
  if (vm.count("list-plugins")) actions.push_back({CliOptions::Action::kListPlugins, "--list-plugins"});
  if (vm.count("describe")) actions.push_back({CliOptions::Action::kDescribe, "--describe"});
  const bool calibrate = vm.count("calibrate") > 0;
  if (calibrate) actions.push_back({CliOptions::Action::kCalibrate, "--calibrate"});
  const bool sweeping = vm.count("sweep") || vm.count("seeds");
  if (vm.count("algorithm") && !o.print_plan && !calibrate)
    actions.push_back({sweeping ? CliOptions::Action::kSweep : CliOptions::Action::kRun, "--algorithm"});
  if (o.print_plan) actions.push_back({CliOptions::Action::kPrintPlan, "--print-plan"});
  if (vm.count("sync-tracking")) actions.push_back({CliOptions::Action::kSyncTracking, "--sync-tracking"});
  if (actions.size() > 1 && actions[0].first != CliOptions::Action::kHelp)
    throw CliError(std::string(actions[0].second) + " and " + actions[1].second + " cannot be used together");
  if (actions.empty()) {
    if (argc > 1)
      throw CliError("nothing to do: give --probe, --list-plugins, --describe NAME, --algorithm NAME or --sync-tracking RUN_DIR");
    return o;  // bare `host`: help
  }
  o.action = actions[0].first;

  const bool running = o.action == CliOptions::Action::kRun || o.action == CliOptions::Action::kSweep;
  if (o.action == CliOptions::Action::kSweep) {
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
  if (vm.count("sweep-parallel") && sweep_parallel != "auto") {
    char* end = nullptr;
    errno = 0;
    const long n = std::strtol(sweep_parallel.c_str(), &end, 10);
    if (sweep_parallel.empty() || *end != '\0' || errno != 0 || n < 1 || n > 1024)
      throw CliError("--sweep-parallel must be auto or a whole number from 1 to 1024, got '" + sweep_parallel + "'");
    o.sweep_parallel = static_cast<int>(n);
  }
  const bool calibrating = o.action == CliOptions::Action::kCalibrate;
  const bool planning_action = running || calibrating || o.action == CliOptions::Action::kPrintPlan;
  if (!running) {
    // --print-plan --algorithm X --command eval: the plan of that command (what it uses of it).
    if (vm.count("command") && !(o.action == CliOptions::Action::kPrintPlan && !o.algorithm.empty()))
      throw CliError("--command only applies with --algorithm");
    for (const char* opt : {"run-dir", "resume", "benchmark", "nnodes", "node-rank", "master-addr", "master-port",
                            "preempt-signal"}) {
      if (!vm.count(opt)) continue;
      if (o.algorithm.empty()) throw CliError(std::string("--") + opt + " only applies with --algorithm");
      // --calibrate or --print-plan with --algorithm: they plan for a config, not for a run.
      const std::string action = actions[0].second;
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
  if (vm.count("track")) {
    if (!running) throw CliError("--track only applies with --algorithm");
    if (o.track != "mlflow" && o.track != "none")
      throw CliError("--track '" + o.track + "' is not a tracker this host knows (mlflow, or none)");
  }
  if (o.action == CliOptions::Action::kSyncTracking) {
    o.sync_tracking_dir = vm["sync-tracking"].as<std::string>();
    if (o.sync_tracking_dir.empty()) throw CliError("--sync-tracking needs a run folder");
  }
  if (vm.count("mlflow-experiment") && !running && o.action != CliOptions::Action::kSyncTracking)
    throw CliError("--mlflow-experiment only applies with --algorithm or --sync-tracking");
  if (vm.count("mlflow-experiment") && o.mlflow_experiment.empty())
    throw CliError("--mlflow-experiment needs a name");
  if (calibrating && (o.no_calibrate || vm.count("nproc-per-node")))
    throw CliError(std::string("--calibrate cannot be combined with ") + (o.no_calibrate ? "--no-calibrate" : "--nproc-per-node"));
  if (o.action == CliOptions::Action::kPrintPlan && o.algorithm.empty() && (vm.count("config") || vm.count("set")))
    throw CliError("--config and --set need --algorithm (they configure an algorithm)");
  if (o.benchmark) {
    if (!o.command.empty() && o.command != "benchmark")
      throw CliError("--benchmark runs the 'benchmark' command; it cannot be combined with --command " + o.command);
    o.command = "benchmark";
  }
  if (vm.count("format")) {
    if (o.action != CliOptions::Action::kDescribe) throw CliError("--format only applies with --describe");
    if (o.describe_format != "text" && o.describe_format != "json" && o.describe_format != "markdown")
      throw CliError("--format '" + o.describe_format + "' is not one of text, json, markdown");
    if (o.json && o.describe_format != "json") throw CliError("--json and --format " + o.describe_format + " disagree");
  }
  if (o.json && o.action == CliOptions::Action::kDescribe) o.describe_format = "json";
  if (o.json && o.action != CliOptions::Action::kProbe && o.action != CliOptions::Action::kListPlugins &&
      o.action != CliOptions::Action::kDescribe && !o.benchmark)
    throw CliError("--json only applies with --probe, --list-plugins, --describe or --benchmark");
  if ((o.resume || o.resume_auto) && o.run_dir.empty())
    throw CliError(std::string("--resume") + (o.resume_auto ? " auto" : "") + " needs --run-dir naming the run to continue");
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
  return o;
}

}  // namespace mlhost
