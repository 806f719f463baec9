// The part of a worker's environment that is the same on every device: its CPU threads
// (thread_env.hpp: OpenMP's thread count, binding and wait policy) and its memory allocator
// (allocator_env.hpp). A GPU run has a CPU side too (data loading, the host half of every
// operator, CPU operators), so the host sets these for every worker, whatever its device:
// a device plugin's prepare() returns only its own device's variables (visible devices, its
// allocator's options). The variables it sets are mlh::host_owned_variables()
// (mlh/host_owned_env.hpp); one a device plugin sets as well is not used, and the plan says so.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <mlh/host_owned_env.hpp>
#include <mlh/plan_reader.hpp>
#include <mlh/plugin.hpp>

#include "plan/allocator_env.hpp"
#include "plan/thread_env.hpp"

// The host's own, in its namespace: the SDK's deprecated shims of the same names
// (mlh/thread_env.hpp and others) have other bodies, and a program must not see two.
namespace mlhost {

// default_intra_op: the thread count when the plan has none (the host's plans always have one).
inline std::vector<mlh::EnvVar> worker_cpu_environment(const mlh::PlanReader& plan, std::optional<int> default_intra_op) {
  std::vector<mlh::EnvVar> env = thread_environment(read_thread_plan(plan, default_intra_op));
  for (mlh::EnvVar& var : allocator_environment(plan)) env.push_back(std::move(var));
  return env;
}

}  // namespace mlhost

