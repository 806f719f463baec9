// The types planning shares: what a plan is made from (PlanRequest: the device, the
// algorithm, the user's choices, the launch), what it gives (PlannedRun: plan.json, the config,
// each worker's placement and environment), the services it measures through, and its error.
// The planner's parts (plan_values, effects, calibration, the launch layout) and the stages
// that call plan_run() (planner.hpp) include this, not the planner.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "plan/calibration/result.hpp"
#include "plan/device_rules.hpp"
#include "plan/hardware_settings.hpp"
#include "plan/machine_share.hpp"
#include "plugins/algorithm_info.hpp"
#include "probe/device.hpp"
#include "probe/ranking.hpp"

namespace mlhost {

// A plan that cannot be made: a value the device cannot run, a preset the algorithm does
// not have, a config it refuses. Bad input: the message names the value and where it was set.
class PlanError : public HostError {
 public:
  explicit PlanError(const std::string& message) : HostError(message, kExitBadInput) {}
};

// How the ranks of a run are laid out (resolved from the command line or a launcher's
// environment by the command-line stage). One process unless world_size > 1.
struct Launch {
  std::string source = "single process";  // "--nproc-per-node", "torchrun environment", "SLURM environment"
  int world_size = 1;
  int nnodes = 1;
  int local_processes = 1;  // ranks sharing this machine (they share its CPU cores)
  int workers_here = 1;     // workers this host process starts (1 when another launcher started it)
  int first_rank = 0;       // global rank of its first worker
  int first_local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  int timeout_s = 300;

  bool distributed() const { return world_size > 1; }
  // Started by torchrun or SLURM: this process is one rank, and rank 0's host owns the run folder.
  bool external() const { return source != "single process" && source != "--nproc-per-node"; }
};

// What the user fixed on the command line; "auto" is not a choice and arrives as unset.
struct PlanOverrides {
  std::optional<std::string> precision;  // --precision
  std::optional<int64_t> batch_size;     // --batch-size N
  bool batch_size_auto = false;          // --batch-size auto: the batch size finder
  std::optional<std::string> allocator;  // --allocator
  std::optional<int64_t> threads;        // --threads N: the worker's intra-op threads
  std::optional<int64_t> max_steps;      // --max-steps N
  std::string max_steps_from = "--max-steps";  // or "MLH_MAX_STEPS", which stands in for it
  std::optional<nlohmann::json> init_from;  // --init-from PATH --freeze ...: {"path", "freeze": [names]}
};

// Whether planning may measure (calibration and the batch size finder), and where results
// are kept between runs.
struct MeasurementPolicy {
  enum class Calibrate {
    kCachedOnly,  // use a cached calibration, never measure (--print-plan, --no-calibrate, distributed runs)
    kIfMissing,   // measure when there is none for this machine and algorithm (a run)
    kAlways,      // measure again, replacing the cached one (--calibrate)
  };
  Calibrate calibrate = Calibrate::kCachedOnly;
  std::string why_cached_only;  // shown in the plan: "not calibrated: <why>"
  // --print-plan: says what a run would do instead (measure, or not on a shared machine).
  bool previews_a_run = false;
  bool may_search_batch = true; // false: --batch-size auto takes a cached batch only (--print-plan)
  double seconds = 60;          // the time bound of one calibration or batch search
  std::filesystem::path cache_file;  // empty: nothing cached, nothing kept
};

// Where the allocators' libraries are looked for (plan/allocator.hpp).
struct AllocatorSearch {
  std::optional<std::string> path;  // MLH_ALLOCATOR_PATH
  bool system = true;               // the system's library folders too (tests: false)
};

struct PlanRequest {
  Device device;    // the one the ranking chose (plan_run may choose another by measurement)
  Ranking ranking;  // every device probed: distributed ranks take GPUs from it
  std::optional<AlgorithmInfo> algorithm;  // none: a plan of the device alone (--print-plan)
  std::string command;                     // the algorithm's command (its default when empty)
  std::filesystem::path run_dir;           // describe_run reads a trained model from it
  bool on_trained_run = false;  // a command on the trained run in run_dir: the plan names it (trained_run_dir)
  nlohmann::json user_config = nlohmann::json::object();  // what the user set of the config
  // On a resumed or trained run: the part of user_config this command's --config and --set
  // gave (the rest is the run's config.json, every field of it); a value from the rest was not
  // chosen for this command.
  nlohmann::json config_set_now = nlohmann::json::object();
  bool resume = false;  // user_config holds the run's whole config.json, config_set_now this launch's
  // A resumed training run: the plan.json of its last launch (null otherwise). The values that
  // change a run's numbers (threads, precision) are kept from it on the same device, unless
  // the command line sets them (docs/plan.md, "A resumed run keeps its numbers").
  nlohmann::json resumed_plan;
  PlanOverrides overrides;
  std::optional<HardwareSettings> settings;
  std::string settings_file_status;  // which settings file was read, and why that one
  std::vector<DeviceRule> rules;
  AllocatorSearch allocators;
  MeasurementPolicy measurement;
  Launch launch;
  // Other runs and load on this machine (not looked at unless set): a shared machine's plan
  // leaves their cores to them and lets idle OpenMP threads sleep; calibration waits for a
  // quiet machine.
  MachineShare sharing;
};

// One worker this host starts: its place in the run and what it starts with.
struct WorkerPlacement {
  int rank = 0, local_rank = 0, world_size = 1;
  Device device;
  std::string torch_device;  // what the worker passes LibTorch (the device plugin may narrow it)
  // Set before LibTorch starts: the plan's CPU side, the device plugin's own variables and,
  // in a distributed run, the rendezvous variables torchrun would set.
  std::map<std::string, std::string> environment;
};

struct PlannedRun {
  Device device;    // the device chosen (by measurement where there was a choice)
  Ranking ranking;  // the request's ranking, reordered by the measured speeds
  nlohmann::json plan;    // plan.json: every value with its source (docs/plan.md)
  nlohmann::json config;  // the algorithm's config as it runs (null without an algorithm)
  std::string command;    // the algorithm's command (empty without an algorithm)
  std::optional<CalibrationResult> calibration;  // the one the plan used, if any
  std::vector<WorkerPlacement> workers;          // one per worker this host starts
};

// The reply of one run of the algorithm's calibrate command.
struct CalibrateOutcome {
  nlohmann::json result;  // the run summary's "result"
  std::string error;      // empty: it completed
  bool timed_out = false;
};

// What planning needs from outside itself.
class PlanServices {
 public:
  virtual ~PlanServices() = default;
  // The algorithm's account of a run (ABI 1.1 describe_run): {"model", "plan_fields"}, or
  // null when it does not say. Throws PlanError for a config or plan it refuses.
  virtual nlohmann::json describe_run(const AlgorithmInfo& algorithm, const std::string& command,
                                      const nlohmann::json& config, const Device& device, const nlohmann::json& plan,
                                      const std::filesystem::path& run_dir) = 0;
  // The device plugin's own variables for `device` and `plan` (its prepare()).
  virtual nlohmann::json device_environment(const Device& device, const nlohmann::json& plan) = 0;
  // One run of the algorithm's "calibrate" command with `worker` and `plan` (whose
  // "calibration" object says what to measure), killed at `deadline`. Throws HostError when
  // the user stopped it.
  virtual CalibrateOutcome calibrate(const AlgorithmInfo& algorithm, const WorkerPlacement& worker,
                                     const nlohmann::json& plan, const nlohmann::json& config,
                                     std::chrono::steady_clock::time_point deadline) = 0;
  // How far a calibration is (runs done of those planned), for a progress display.
  virtual void calibration_progress(int /*done*/, int /*planned*/) {}
};

}  // namespace mlhost
