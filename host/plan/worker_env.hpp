// The part of a worker's environment that is the same on every device: its CPU threads
// (thread_env.hpp: OpenMP's thread count, binding and wait policy) and its memory allocator
// (allocator_env.hpp). A GPU run has a CPU side too (data loading, the host half of every
// operator, CPU operators), so the host sets these for every worker, whatever its device:
// a device plugin's prepare() returns only its own device's variables (visible devices, its
// allocator's options). The variables named by worker_cpu_variable_names() are the host's;
// one a device plugin sets as well is not used, and the plan says so.
#ifndef MLH_WORKER_ENV_HPP
#define MLH_WORKER_ENV_HPP

#include <optional>
#include <string>
#include <vector>

#include <mlh/plan_reader.hpp>
#include <mlh/plugin.hpp>

#include "plan/allocator_env.hpp"
#include "plan/thread_env.hpp"

namespace mlh {

// default_intra_op: the thread count when the plan has none (the host's plans always have one).
inline std::vector<EnvVar> worker_cpu_environment(const PlanReader& plan, std::optional<int> default_intra_op) {
  std::vector<EnvVar> env = thread_environment(read_thread_plan(plan, default_intra_op));
  for (EnvVar& var : allocator_environment(plan)) env.push_back(std::move(var));
  return env;
}

// Every variable worker_cpu_environment() may set. The SDK's deprecated
// sdk/include/mlh/worker_env.hpp repeats this list for plugins written against the ABI 1.1
// SDK (detail::host_owned_worker_variables): change both together.
inline const std::vector<std::string>& worker_cpu_variable_names() {
  static const std::vector<std::string> names = {
      "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MLH_INTEROP_THREADS", "OMP_PROC_BIND",
      "OMP_WAIT_POLICY", "LD_PRELOAD",      "MALLOC_CONF",          "GLIBC_TUNABLES"};
  return names;
}

inline bool is_worker_cpu_variable(const std::string& name) {
  for (const std::string& n : worker_cpu_variable_names())
    if (n == name) return true;
  return false;
}

}  // namespace mlh

#endif  // MLH_WORKER_ENV_HPP
