// Each worker's environment, in place before LibTorch starts (the flow's step 6, Prepare):
// the host turns the plan's CPU side (threads, OpenMP binding and wait policy, the
// allocator) into variables for every device, and the device plugin adds only its own
// (visible devices, its allocator's options, the device string the worker then uses). A
// step of plan_run().
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "probe/device.hpp"

namespace mlhost {

struct WorkerEnvironment {
  std::map<std::string, std::string> variables;
  std::string torch_device;           // the device plugin's MLH_TORCH_DEVICE, else the device's own
  std::vector<std::string> warnings;  // CPU-side variables the device plugin set too, not used
};

// `device_variables`: what the device plugin's prepare() returned for `device` and `plan`
// (name -> value). Throws PlanError when the plan's CPU side is malformed.
WorkerEnvironment worker_environment(const nlohmann::json& plan, const Device& device,
                                     const nlohmann::json& device_variables);

}  // namespace mlhost
