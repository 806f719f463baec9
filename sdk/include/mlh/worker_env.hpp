// DEPRECATED: kept so that device plugins written against the SDK of ABI 1.1 (commit 92d6261)
// still compile. Removed no earlier than the SDK's next major version: docs/sdk-changelog.md
// (installed as <prefix>/share/doc/mlhost/docs/sdk-changelog.md) says what to use instead.
//
// What it did: a device plugin's prepare() returned the worker's CPU side (OpenMP, MKL and
// OpenBLAS thread counts, OpenMP binding and wait policy, the memory allocator's LD_PRELOAD,
// MALLOC_CONF or GLIBC_TUNABLES), computed from the plan by worker_cpu_environment().
// What happens now: the host sets those variables itself for every worker on every device,
// from the plan (docs/plan.md, "environment"); a CPU-side variable a device plugin returns is
// not used (the host warns where it differs). So worker_cpu_environment() returns nothing:
// the device's own variables are all a plugin has left to return, and an old plugin that
// appends them to this (empty) list keeps working unchanged.
#ifndef MLH_SDK_WORKER_ENV_HPP
#define MLH_SDK_WORKER_ENV_HPP

#include <optional>
#include <string>
#include <vector>

// As the old header did: a plugin may have used their functions through this include alone.
#include "allocator_env.hpp"
#include "host_owned_env.hpp"
#include "plan_reader.hpp"
#include "plugin.hpp"
#include "thread_env.hpp"

namespace mlh {

// Returns no variables: the host sets the CPU side for every worker (see above). Neither
// argument is read any more; the host checks the plan's thread and allocator fields.
[[deprecated(
    "mlh::worker_cpu_environment is a no-op: the host sets the worker's CPU-side variables (threads, OpenMP, "
    "allocator) from the plan for every device; return only your device's own variables from "
    "mlh::DevicePlugin::prepare() instead (docs/sdk-changelog.md)")]]
inline std::vector<EnvVar> worker_cpu_environment(const PlanReader& /*plan*/,
                                                  std::optional<int> /*default_intra_op*/) {
  return {};
}


// Still true, and no longer needed: the host ignores these names in what prepare() returns.
[[deprecated(
    "mlh::worker_cpu_variable_names: the host owns these variables and ignores them in what prepare() returns; "
    "return only your device's own variables from mlh::DevicePlugin::prepare() instead; "
    "mlh::host_owned_variables() (mlh/host_owned_env.hpp) lists them (docs/sdk-changelog.md)")]]
inline const std::vector<std::string>& worker_cpu_variable_names() {
  return host_owned_variables();
}

[[deprecated(
    "mlh::is_worker_cpu_variable: the host owns these variables and ignores them in what prepare() returns; "
    "return only your device's own variables from mlh::DevicePlugin::prepare() instead (docs/sdk-changelog.md)")]]
inline bool is_worker_cpu_variable(const std::string& name) {
  return is_host_owned_variable(name);
}

}  // namespace mlh

#endif  // MLH_SDK_WORKER_ENV_HPP
