// The host's command line (Boost.Program_options).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "probe/ranking.hpp"

namespace mlhost {

// A bad command line. main() prints it with a hint and exits with status 2.
class CliError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CliOptions {
  enum class Action { kHelp, kVersion, kProbe, kListPlugins, kDescribe, kRun, kSweep, kPrintPlan, kCalibrate, kSyncTracking };
  Action action = Action::kHelp;

  bool json = false;
  std::vector<std::filesystem::path> plugin_dirs;
  bool no_default_plugin_dir = false;
  bool allow_unsafe_plugins = false;
  std::filesystem::path plugin_allowlist;  // --plugin-allowlist FILE (wins over $MLH_PLUGIN_ALLOWLIST)
  DeviceRequest device;
  bool no_gpu = false;
  std::string log_level = "info";
  int probe_timeout_ms = 10000;

  std::string describe;   // --describe NAME
  std::string describe_format = "text";  // --format: text (a summary), json or markdown; --json: json
  std::string algorithm;  // --algorithm NAME
  std::string command;    // --command NAME; empty: the algorithm's default
  std::filesystem::path config_file;
  std::vector<std::string> sets;  // --set key=value, in order
  std::filesystem::path run_dir;  // empty: runs/<algorithm>-<time>
  bool resume = false;       // --resume: the folder must hold a run
  bool resume_auto = false;  // --resume auto: continue the run the folder holds, else start one
  int preempt_signal = 0;    // --preempt-signal (or MLH_PREEMPT_SIGNAL): preempts like SIGTERM; 0: none
  bool benchmark = false;  // --benchmark: run the algorithm's benchmark command, print a table

  // Experiment tracking (run/tracking): --track mlflow sends the run to MLflow's tracking
  // server ($MLFLOW_TRACKING_URI); --sync-tracking RUN_DIR sends what it has not got yet.
  std::string track;                          // "", "mlflow" or "none" ("": the settings file's track key)
  std::string mlflow_experiment;              // --mlflow-experiment (else $MLFLOW_EXPERIMENT_NAME)
  std::filesystem::path sync_tracking_dir;    // --sync-tracking RUN_DIR

  // Planning.
  std::optional<std::string> precision;      // --precision
  std::optional<int64_t> batch_size;         // --batch-size N
  bool batch_size_auto = false;              // --batch-size auto: the batch size finder
  std::filesystem::path hardware_config;     // --hardware-config
  bool no_hardware_config = false;           // --no-hardware-config
  std::filesystem::path rules_file;          // --rules
  bool print_plan = false;                   // --print-plan: show the plan, run nothing
  std::optional<std::string> allocator;      // --allocator
  std::optional<int64_t> threads;            // --threads N
  bool no_calibrate = false;                 // --no-calibrate
  int calibration_seconds = 60;              // --calibration-seconds
  std::optional<int64_t> max_steps;          // --max-steps N: end the run after N optimizer steps
  std::string max_steps_from = "--max-steps";  // or "MLH_MAX_STEPS", which stands in for it
  std::optional<std::string> init_from;      // --init-from PATH: the model's first weights (absolute)
  std::vector<std::string> freeze;           // --freeze NAME[,NAME...]: parameters not trained

  // Sweeps (host/sweep; docs/tracking.md "Sweeps and seeds"): --algorithm with --sweep or --seeds runs
  // trials, each an ordinary run in a folder of its own inside --run-dir.
  std::vector<std::string> sweep;  // --sweep KEY=VALUES, in order
  int sweep_random = 0;            // --sweep-random N: N random draws; 0: the grid
  std::string seeds;               // --seeds N or a list; empty: the config's seed
  int sweep_parallel = 0;          // --sweep-parallel N; 0: auto (one per GPU, one on a CPU)

  // Distributed (docs/running.md "Distributed training"); 0 / empty: not given.
  int nproc_per_node = 0;     // --nproc-per-node
  int nnodes = 0;             // --nnodes
  int node_rank = -1;         // --node-rank
  std::string master_addr;    // --master-addr
  int master_port = 0;        // --master-port
  int dist_timeout_s = 300;   // --dist-timeout
  int max_restarts = 0;       // --max-restarts: restarts from the last checkpoint after a worker fails

  std::string help;  // the --help text
};

// Parses argv. Throws CliError with a message naming the option or value.
CliOptions parse_cli(int argc, const char* const* argv);

}  // namespace mlhost
