#include "cli/option_table.hpp"

#include <mlh/plan_setting_check.hpp>

#include <sstream>

namespace mlhost {

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

// One function per section of --help, in the order it shows them.

// The options for help, version and logging.
po::options_description general_options(CliOptions& o) {
  po::options_description group("General");
  group.add_options()
      ("help,h", "show this help and exit")
      ("version", "show the version and exit")
      ("log-level", po::value(&o.log_level)->default_value("info"),
       "trace, debug, info, warn, error or off");
  return group;
}

// The options for where plugins come from, which device runs.
po::options_description plugin_and_device_options(CliOptions& o, CliRawValues& raw) {
  po::options_description group("Plugins and devices");
  group.add_options()
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
      ("device", po::value(&raw.device)->default_value("auto"),
       "auto, cpu, gpu (the best GPU of any kind), cuda, cuda:N, mps, or a device plugin's kind[:N]")
      ("no-gpu", "never choose a GPU")
      ("probe-timeout", po::value(&o.probe_timeout_ms)->default_value(10000),
       "milliseconds a device plugin may take to probe before it is killed");
  return group;
}

// The options for which algorithm runs what, in which run folder.
po::options_description run_options(CliOptions& o, CliRawValues& raw) {
  po::options_description group("Running an algorithm");
  group.add_options()
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
      ("resume", po::value(&raw.resume_mode)->implicit_value("yes")->value_name("auto"),
       "continue the run in --run-dir from its newest checkpoint; '--resume auto': continue it if the folder "
       "holds a run, else start one there (the same command for every launch of a preemptible job)")
      ("preempt-signal", po::value(&raw.preempt_signal),
       "a signal that preempts the run as SIGTERM does (e.g. USR1, for SLURM's --signal=USR1@120): every rank "
       "saves a checkpoint at its next step and the host exits 75; default $MLH_PREEMPT_SIGNAL")
      ("benchmark", "run the algorithm's benchmark command on the chosen device and print a table (--json: JSON)");
  return group;
}

// The options for sending a run to an experiment tracker.
po::options_description tracking_options(CliOptions& o) {
  po::options_description group("Experiment tracking (MLflow's REST API; docs/tracking.md)");
  group.add_options()
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
  return group;
}

// The options for many runs of one algorithm.
po::options_description sweep_options(CliOptions& o, CliRawValues& raw) {
  po::options_description group("Sweeps and seeds (docs/tracking.md)");
  group.add_options()
      ("sweep", po::value<std::vector<std::string>>()->composing()->value_name("KEY=VALUES"),
       "run a trial for each value (repeatable: a grid over every combination): lr=0.1,0.01; with --sweep-random "
       "also a distribution: lr=loguniform(1e-4,1e-1), dropout=uniform(0,0.5), width=randint(32,256); each trial "
       "is a run folder inside --run-dir")
      ("sweep-random", po::value(&o.sweep_random)->value_name("N"),
       "N trials drawn at random from the --sweep values and distributions instead of the grid")
      ("seeds", po::value(&o.seeds)->value_name("N"),
       "run every configuration with the seeds 1 to N (or a list: 0,7,42) and give each metric's mean and 95% "
       "interval over them")
      ("sweep-parallel", po::value(&raw.sweep_parallel)->value_name("N"),
       "trials at once: auto (default: one per GPU of the chosen kind, one on a CPU, whose run takes every core) or N");
  return group;
}

// "auto, fp32, fp16 or bf16": what an option that overrides a plan setting of choices takes,
// from the plan's table.
std::string auto_or_choices(const char* setting) {
  const std::vector<std::string> choices = mlh::plan_setting_choices(mlh::plan_setting(setting));
  std::string text = "auto";
  for (size_t i = 0; i < choices.size(); ++i) text += (i + 1 == choices.size() ? " or " : ", ") + choices[i];
  return text;
}

// The options for overrides of the plan a run gets.
po::options_description planning_options(CliOptions& o, CliRawValues& raw) {
  static const std::string precision_help = auto_or_choices("precision") + " (default: auto, or the settings file)";
  static const std::string allocator_help =
      "the worker's memory allocator: " + auto_or_choices("allocator") + " (default: calibrated, else jemalloc)";
  po::options_description group("Planning (docs/plan.md)");
  group.add_options()
      ("precision", po::value(&raw.precision), precision_help.c_str())
      ("batch-size", po::value(&raw.batch_size),
       "reference batch size, or auto: the largest that fits, found by trying real training steps "
       "(default: the rules for the device)")
      ("hardware-config", po::value<std::string>(), "INI settings file (see share/mlhost/hardware.ini); "
                                                    "default: $MLH_HARDWARE_CONFIG, else the first of ./mlhost.ini, "
                                                    "~/.config/mlhost/hardware.ini, /etc/mlhost/hardware.ini")
      ("no-hardware-config", "read no hardware settings file, not even one found in those places")
      ("rules", po::value<std::string>(), "JSON file of auto-configuration rules tried before the shipped ones")
      ("print-plan", "show the plan for the chosen device (and --algorithm), run nothing")
      ("threads", po::value(&raw.threads)->value_name("N"),
       "the worker's intra-op threads (LibTorch, OpenMP, BLAS) (default: the settings file's intra_op_threads, "
       "else calibrated, else the device plugin's recommendation, else all online CPUs)")
      ("allocator", po::value(&raw.allocator), allocator_help.c_str())
      ("calibrate", "measure the algorithm's training speed here under candidate allocators, thread counts and "
                    "precisions, cache the fastest per machine and algorithm (all algorithms without --algorithm)")
      ("no-calibrate", "run with cached or default settings; never calibrate first")
      ("calibration-seconds", po::value(&o.calibration_seconds)->default_value(60),
       "the most seconds a calibration may take")
      ("max-steps", po::value(&raw.max_steps),
       "end training after N steps of its loop (optimizer steps; PPO: iterations, ProtoNet: episodes), "
       "validating and saving as at a normal end: a smoke test of a plugin or a config")
      ("init-from", po::value<std::string>(),
       "start training from these weights: a run's model.safetensors or checkpoints/*.ckpt, or what PyTorch's "
       "torch.save wrote (a state dict or a whole module; names may carry one prefix more, e.g. '_orig_mod.'); "
       "shapes are checked per tensor")
      ("freeze", po::value<std::vector<std::string>>()->composing(),
       "with --init-from: parameters not to train, by name, dotted prefix ('encoder' freezes 'encoder.0.weight') "
       "or glob; comma-separated or repeated");
  return group;
}

// The options for ranks and their meeting point.
po::options_description distributed_options(CliOptions& o) {
  po::options_description group("Distributed data-parallel training (torchrun's options)");
  group.add_options()
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
  return group;
}

}  // namespace

po::options_description declare_cli_options(CliOptions& o, CliRawValues& raw) {
  po::options_description all;
  all.add(general_options(o))
      .add(plugin_and_device_options(o, raw))
      .add(run_options(o, raw))
      .add(tracking_options(o))
      .add(sweep_options(o, raw))
      .add(planning_options(o, raw))
      .add(distributed_options(o));
  return all;
}

std::string cli_help_text(const po::options_description& all) {
  std::ostringstream help;
  help << kUsage << "\n" << all;
  return help.str();
}

}  // namespace mlhost
