#include "plan/worker_environment.hpp"

#include "plan/worker_env.hpp"

#include "plan/plan_types.hpp"

namespace mlhost {

using nlohmann::json;

WorkerEnvironment worker_environment(const json& plan, const Device& device, const json& device_variables) {
  WorkerEnvironment env;
  try {
    for (const mlh::EnvVar& var : worker_cpu_environment(mlh::PlanReader(plan.dump()), std::nullopt))
      env.variables[var.name] = var.value;
  } catch (const mlh::Error& e) {
    throw PlanError(e.what());
  }
  for (const auto& [name, value] : device_variables.items()) {
    const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
    if (mlh::is_host_owned_variable(name)) {
      // The CPU side is the plan's, on every device: a plugin written before the host set it
      // may still return the same variables, which only matters where they differ.
      const auto ours = env.variables.find(name);
      const std::string planned = ours == env.variables.end() ? "unset" : ours->second;
      if (planned != text)
        env.warnings.push_back("device plugin '" + device.plugin + "' sets " + name + "=" + text +
                               " for the worker; not used: the host sets the CPU side from the plan (" + name + " " +
                               planned + ")");
      continue;
    }
    env.variables[name] = text;
  }
  const auto narrowed = env.variables.find("MLH_TORCH_DEVICE");
  env.torch_device = narrowed != env.variables.end() ? narrowed->second : device.torch_device;
  return env;
}

}  // namespace mlhost
