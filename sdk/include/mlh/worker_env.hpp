// The part of a worker's environment that is the same on every device: its CPU threads
// (thread_env.hpp: OpenMP's thread count, binding and wait policy) and its memory allocator
// (allocator_env.hpp). A GPU run has a CPU side too (data loading, the host half of every
// operator, CPU operators), so every device plugin's prepare() returns this beside its own
// device's variables, and a plan's thread and allocator settings take effect on any device.
#ifndef MLH_WORKER_ENV_HPP
#define MLH_WORKER_ENV_HPP

#include <optional>
#include <vector>

#include "allocator_env.hpp"
#include "plan_reader.hpp"
#include "plugin.hpp"
#include "thread_env.hpp"

namespace mlh {

// default_intra_op: the thread count when the plan has none (a CPU plugin's recommendation;
// GPU plugins pass nullopt and then set no thread count of their own).
inline std::vector<EnvVar> worker_cpu_environment(const PlanReader& plan, std::optional<int> default_intra_op) {
  std::vector<EnvVar> env = thread_environment(read_thread_plan(plan, default_intra_op));
  for (EnvVar& var : allocator_environment(plan)) env.push_back(std::move(var));
  return env;
}

}  // namespace mlh

#endif  // MLH_WORKER_ENV_HPP
