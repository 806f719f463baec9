// Planning in the host's unit tests, spawning nothing: a request for a device with the shipped
// device rules, algorithm descriptions made from JSON, and PlanServices that answer from the
// test instead of from plugins and workers.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/calibration/result.hpp"
#include "plan/planner.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace mlhost::testing {

// What plugins and workers would answer, set by the test, and what planning asked of them.
class FakePlanServices : public PlanServices {
 public:
  nlohmann::json run_description;                                 // describe_run's answer; null: it says nothing
  std::string refuse_config;  // describe_run refuses the config with this (a PlanError) where set
  nlohmann::json device_variables = nlohmann::json::object();     // prepare()'s
  // The calibrate command's throughput with a candidate's settings; <= 0: it fails.
  std::function<double(const CalibrationSettings&)> throughput = [](const CalibrationSettings&) { return 1.0; };
  // The calibrate command's throughput on a device, whatever the settings (the device choice's
  // measurements); a device not listed gets `throughput`.
  std::map<std::string, double> device_rates;
  // The precision check a bf16 candidate reports (null: none).
  nlohmann::json precision_check;
  // The batch search's answer ({"batch", "reason", "trials", "complete"}).
  nlohmann::json batch_search = {{"batch", 48}, {"reason", "the largest that fit"}, {"trials", nlohmann::json::array()},
                                 {"complete", true}};

  // How long each calibrate command takes (the time bound's tests).
  std::chrono::milliseconds calibrate_delay{0};

  int describe_runs = 0, device_preparations = 0;
  std::vector<nlohmann::json> calibrate_plans;       // each calibrate run's plan, in order
  std::vector<WorkerPlacement> calibrate_workers;    // and the worker it ran in
  std::vector<nlohmann::json> calibrate_configs;

  nlohmann::json describe_run(const AlgorithmInfo&, const std::string&, const nlohmann::json&, const Device&,
                              const nlohmann::json&, const std::filesystem::path&) override {
    ++describe_runs;
    if (!refuse_config.empty()) throw PlanError(refuse_config);
    return run_description;
  }
  nlohmann::json device_environment(const Device&, const nlohmann::json&) override {
    ++device_preparations;
    return device_variables;
  }
  CalibrateOutcome calibrate(const AlgorithmInfo&, const WorkerPlacement& worker, const nlohmann::json& plan,
                             const nlohmann::json& config, std::chrono::steady_clock::time_point) override {
    std::this_thread::sleep_for(calibrate_delay);
    calibrate_plans.push_back(plan);
    calibrate_workers.push_back(worker);
    calibrate_configs.push_back(config);
    CalibrateOutcome out;
    if (plan["calibration"].contains("batch_search")) {
      out.result = {{"batch_search", batch_search}};
      return out;
    }
    const CalibrationSettings settings{plan["allocator"]["name"], plan["threads"]["intra_op"], plan["precision"]};
    const auto device_rate = device_rates.find(worker.device.id());
    const double rate = device_rate != device_rates.end() ? device_rate->second : throughput(settings);
    if (rate <= 0) {
      out.error = "the step failed on purpose";
      return out;
    }
    out.result = {{"calibration", {{"throughput", rate}, {"unit", "samples"}, {"benchmark", "train_step"}}}};
    if (plan["calibration"].contains("check_precision") && precision_check.is_object())
      out.result["precision_check"] = precision_check;
    return out;
  }
};

// An algorithm plugin's description, as describe() would give it, named `name`.
inline AlgorithmInfo algorithm_info(const nlohmann::json& description, const std::string& name = "algo",
                                    const std::string& torch_version = "2.15.0") {
  PluginManifest manifest;
  manifest.kind = "algorithm";
  manifest.name = name;
  manifest.version = "1.0.0";
  manifest.torch_version = torch_version;
  nlohmann::json d = {{"commands", {"train", "eval"}},
                      {"config_schema", {{"type", "object"}}},
                      {"config_defaults", nlohmann::json::object()},
                      {"presets", {{"full", nlohmann::json::object()}, {"reduced", nlohmann::json::object()}}}};
  d.update(description);
  return AlgorithmInfo::from_description(manifest, d);
}

// A request for `device`, chosen among itself only, with the shipped device rules, no
// settings file, nothing calibrated and no calibration cache: what a plain run would ask.
inline PlanRequest request_for(const Device& device) {
  PlanRequest r;
  r.device = device;
  r.device.available = true;
  r.ranking.devices = {{r.device, true, 1, "the only one"}};
  r.ranking.chosen = 0;
  r.rules = read_device_rules(std::string(MLH_TEST_SHARE_DIR) + "/autoconfig.json");
  r.measurement.why_cached_only = "a test";
  return r;
}

}  // namespace mlhost::testing
