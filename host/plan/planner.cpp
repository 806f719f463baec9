#include "plan/planner.hpp"

#include <spdlog/spdlog.h>

#include "plan/algorithm_config.hpp"
#include "plan/calibration/batch_search.hpp"
#include "plan/calibration/lookup.hpp"
#include "plan/calibration/workload.hpp"
#include "plan/device_choice.hpp"
#include "plan/duration.hpp"
#include "plan/effects.hpp"
#include "plan/launch_layout.hpp"
#include "plan/plan_values.hpp"
#include "plan/plan_writer.hpp"
#include "plan/worker_environment.hpp"
#include "plugins/sha256.hpp"

namespace mlhost {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// The plan being made: its values are decided again whenever what they depend on is measured
// (a calibration, a batch size), and the algorithm's config follows the plan.
class Planner {
 public:
  Planner(const PlanRequest& request, PlanServices& services)
      : request_(request), services_(services), algorithm_(request.algorithm ? &*request.algorithm : nullptr) {}

  PlannedRun run() {
    PlannedRun out;
    if (algorithm_) {
      out.command = command();
      choose_device();
      check_distributed_backend(request_.launch, request_.device, algorithm_->manifest);
    }
    decide();  // without measurements: what a calibration starts from
    if (algorithm_) {
      // A config the plugin refuses (a value only it checks: an environment's id, a module of
      // the user's) is refused before any candidate runs: its describe_run says so, where a
      // calibration would try, and warn about, every candidate first.
      const PlanCalibration calibration = calibration_for_plan(
          request_, plan_.view(), config_, calibrate_command(),
          [this](int done, int planned) { services_.calibration_progress(done, planned); },
          [this, &out] {
            services_.describe_run(*algorithm_, out.command, config_, request_.device, plan_.view(), request_.run_dir);
          });
      out.calibration = calibration.result;
      inputs_.calibration = out.calibration ? &*out.calibration : nullptr;
      inputs_.calibration_status = calibration.status;
      decide();
      // The batch is sought with the calibrated settings (they change what fits and how fast).
      if (request_.overrides.batch_size_auto) {
        const BatchSearch batch = batch_size_for_plan(request_, plan_.view(), config_, calibrate_command());
        batch_search_ = batch.result;
        if (batch_search_.is_object()) inputs_.batch_search = &batch_search_;
        inputs_.batch_search_status = batch.status;
        decide();
      }
    }
    const std::vector<Device> rank_devices = devices_for_ranks(request_.launch, request_.device, request_.ranking);
    plan_launch_layout(plan_, request_.launch, request_.device);
    // Which plugin's code this run is: a later --resume or command on it must be the same.
    if (algorithm_) plan_.set_fact("algorithm", algorithm_->name());
    // The worker reads the model from there and writes into its own folder (mlh/runtime/trained_run.hpp).
    if (request_.on_trained_run) plan_.set_fact("trained_run_dir", std::filesystem::absolute(request_.run_dir).string());
    mark_effects(out.command);
    out.workers = prepare_workers(rank_devices);
    out.plan = plan_.view();
    out.config = config_;
    out.device = request_.device;
    out.ranking = request_.ranking;
    return out;
  }

 private:
  std::string command() const {
    const std::string command = request_.command.empty() ? algorithm_->default_command() : request_.command;
    if (!algorithm_->has_command(command))
      throw PlanError("--command '" + command + "': algorithm '" + algorithm_->name() + "' has " +
                      json(algorithm_->commands).dump());
    return command;
  }

  // Where more than one device could run this, the fastest for this config by measurement
  // (device_choice.hpp); the rest of the plan is made for it.
  void choose_device() {
    const DeviceChoice choice = choose_device_by_speed(request_, [this](const Device& d) { return trial_on(d); });
    request_.ranking = choice.ranking;
    request_.device = *choice.ranking.chosen_device();
    if (!choice.status.empty()) {
      device_choice_ = choice.to_json();
      spdlog::info("device choice: {}", choice.status);
    }
  }

  // One candidate's measurement: this run's plan and config made for `device` (without a
  // calibration) and a calibrate worker of that device timing the step.
  DeviceTrial trial_on(const Device& device) {
    const Device ranked_first = request_.device;
    struct Restore {
      Device& device;
      Device saved;
      ~Restore() { device = saved; }
    } restore{request_.device, ranked_first};
    request_.device = device;
    decide();
    json plan = plan_.view();
    plan["calibration"] = {{"seconds", kDeviceTimingSeconds}};
    const WorkerPlacement worker = placement(plan, device);
    plan["worker_torch_device"] = worker.torch_device;
    DeviceTrial trial;
    // What the figure holds for: this config's workload, run by this worker (its torch device,
    // threads, allocator and the device plugin's variables).
    trial.config_hash = sha256_hex(json{{"workload", step_workload(algorithm_->config_schema, config_)},
                                        {"torch_device", worker.torch_device},
                                        {"environment", worker.environment}}
                                       .dump());
    trial.measure = [this, worker, plan, config = config_](Clock::time_point deadline) {
      return services_.calibrate(*algorithm_, worker, plan, config, deadline);
    };
    return trial;
  }

  // The plan's values from scratch, and the config they give.
  void decide() {
    plan_ = PlanWriter();
    decide_plan_values(plan_, inputs_);
    if (!device_choice_.is_null()) plan_.set_fact("device_choice", device_choice_);
    if (!algorithm_) return;
    try {
      config_ = run_config(*algorithm_, request_.user_config, plan_.view());
    } catch (const ConfigError& e) {
      throw PlanError(e.what());
    }
    // For the algorithm: a value the user chose is never changed to fit the data.
    json set_by_user = json::array();
    add_dotted_names(request_.resume ? request_.config_set_now : request_.user_config, "", set_by_user);
    plan_.set_fact("config_set_by_user", set_by_user);
  }

  // Every field of a nested config object by its dotted name ("model", "model.encoder").
  static void add_dotted_names(const json& object, const std::string& prefix, json& names) {
    if (!object.is_object()) return;
    for (const auto& [key, value] : object.items()) {
      names.push_back(prefix + key);
      add_dotted_names(value, prefix + key + ".", names);
    }
  }

  // Where a worker with this plan would run, and what it starts with.
  WorkerPlacement placement(const json& plan, const Device& device) {
    const WorkerEnvironment env = worker_environment(plan, device, services_.device_environment(device, plan));
    for (const std::string& warning : env.warnings) plan_.add_warning(warning);
    WorkerPlacement w;
    w.device = device;
    w.torch_device = env.torch_device;
    w.environment = env.variables;
    return w;
  }

  // One run of the algorithm's calibrate command with a candidate plan and the config as it
  // is now, in a worker prepared for that plan.
  CalibrateCommand calibrate_command() {
    return [this, config = config_](const json& candidate, Clock::time_point deadline) {
      json plan = candidate;
      const WorkerPlacement worker = placement(plan, request_.device);
      plan["worker_torch_device"] = worker.torch_device;
      return services_.calibrate(*algorithm_, worker, plan, config, deadline);
    };
  }

  void mark_effects(const std::string& command) {
    json description;
    if (algorithm_)
      description = services_.describe_run(*algorithm_, command, config_, request_.device, plan_.view(), request_.run_dir);
    EffectInputs in;
    in.device = &request_.device;
    if (algorithm_) {
      in.algorithm = algorithm_->name();
      in.algorithm_torch = algorithm_->manifest.torch_version;
    }
    in.run_description = description.is_object() ? &description : nullptr;
    mark_plan_effects(plan_, in);
    if (in.run_description) say_expected_duration(description);
  }

  // The run's length from its declared work and the calibration's figure, and a warning
  // before a run of more than an hour: a default that takes hours is not a surprise later.
  void say_expected_duration(const json& description) {
    const std::optional<json> expected = expected_duration(description, plan_.view().value("calibration", json()));
    if (!expected) return;
    plan_.set_fact("expected_duration", *expected);
    if (expected->value("seconds", 0.0) <= kLongRunSeconds) return;
    plan_.add_warning("this run is expected to take " + expected_duration_text(*expected));
  }

  // One worker per rank this host starts, each with the environment its device needs before
  // LibTorch starts; the first one's is the plan's "environment".
  std::vector<WorkerPlacement> prepare_workers(const std::vector<Device>& rank_devices) {
    const Launch& launch = request_.launch;
    std::vector<WorkerPlacement> workers;
    json ranks = json::array();
    for (int i = 0; i < launch.workers_here; ++i) {
      WorkerPlacement w = placement(plan_.view(), rank_devices[static_cast<size_t>(i)]);
      w.rank = launch.first_rank + i;
      w.local_rank = launch.first_local_rank + i;
      w.world_size = launch.world_size;
      ranks.push_back({{"rank", w.rank}, {"device", w.device.id()}, {"torch_device", w.torch_device}});
      workers.push_back(std::move(w));
    }
    plan_.set_fact("environment", workers.front().environment);
    plan_.set_fact("worker_torch_device", workers.front().torch_device);
    if (launch.distributed()) {
      for (WorkerPlacement& w : workers) {
        w.environment["RANK"] = std::to_string(w.rank);
        w.environment["WORLD_SIZE"] = std::to_string(launch.world_size);
        w.environment["LOCAL_RANK"] = std::to_string(w.local_rank);
        w.environment["LOCAL_WORLD_SIZE"] = std::to_string(launch.local_processes);
        w.environment["MASTER_ADDR"] = launch.master_addr;
        w.environment["MASTER_PORT"] = std::to_string(launch.master_port);
        w.environment["MLH_DIST_TIMEOUT_S"] = std::to_string(launch.timeout_s);
      }
      json distributed = plan_.value(mlh::PlanField::kDistributed);
      distributed["ranks"] = ranks;
      plan_.set(mlh::PlanField::kDistributed, distributed, plan_.source(mlh::PlanField::kDistributed));
    }
    return workers;
  }


  PlanRequest request_;  // its device and ranking are the measured choice's once made
  PlanServices& services_;
  const AlgorithmInfo* algorithm_;
  PlanValueInputs inputs_{request_, nullptr, "", nullptr, ""};  // filled in as planning goes
  PlanWriter plan_;
  json config_;
  json batch_search_;
  json device_choice_;  // the plan's "device_choice", when there was a choice
};

}  // namespace

PlannedRun plan_run(const PlanRequest& request, PlanServices& services) { return Planner(request, services).run(); }

}  // namespace mlhost
