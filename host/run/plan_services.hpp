// What planning needs from outside itself (plan/planner.hpp's PlanServices), done the way a
// run does it: describe_run and prepare() in child processes of their plugins, calibrate
// commands in supervised workers started with the candidate's environment, progress on the
// terminal.
#pragma once

#include "plan/planner.hpp"
#include "plugins/discovery.hpp"
#include "run/progress.hpp"

namespace mlhost {

class WorkerPlanServices : public PlanServices {
 public:
  // `discovery`: the plugins found, where the devices' plugins are looked up.
  explicit WorkerPlanServices(const Discovery& discovery);

  nlohmann::json describe_run(const AlgorithmInfo& algorithm, const std::string& command, const nlohmann::json& config,
                              const Device& device, const nlohmann::json& plan,
                              const std::filesystem::path& run_dir) override;
  nlohmann::json device_environment(const Device& device, const nlohmann::json& plan) override;
  CalibrateOutcome calibrate(const AlgorithmInfo& algorithm, const WorkerPlacement& worker, const nlohmann::json& plan,
                             const nlohmann::json& config, std::chrono::steady_clock::time_point deadline) override;
  void calibration_progress(int done, int planned) override;

 private:
  const Discovery& discovery_;
  ProgressDisplay progress_;
};

}  // namespace mlhost
