// The CPU-thread settings of the plan (docs/plan.md: threads, omp_proc_bind, omp_wait_policy)
// as the environment a device plugin's prepare() returns. Every run has CPU threads, GPU runs
// too (data loading, the host side of every operator, OpenMP in CPU operators), so every
// device plugin sets them; OpenMP, MKL and OpenBLAS read them once, when LibTorch starts.
//
//   OMP_NUM_THREADS, MKL_NUM_THREADS, OPENBLAS_NUM_THREADS = threads.intra_op
//   MLH_INTEROP_THREADS = threads.inter_op (the runtime's apply_plan sets the pool itself)
//   OMP_PROC_BIND, OMP_WAIT_POLICY: when the plan sets them (null: the OpenMP runtime's own)
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <mlh/plan_reader.hpp>
#include <mlh/plugin.hpp>

// The host's own, in its namespace: the SDK's deprecated shims of the same names
// (mlh/thread_env.hpp and others) have other bodies, and a program must not see two.
namespace mlhost {

struct ThreadPlan {
  std::optional<int> intra_op;  // unset: no thread counts in the environment
  std::optional<int> inter_op;  // likewise
  std::string omp_proc_bind;    // "" when the plan leaves it to the OpenMP runtime
  std::string omp_wait_policy;  // likewise
};

// Reads "threads": {"intra_op": N, "inter_op": M}, "omp_proc_bind" (false, true, close,
// spread, master) and "omp_wait_policy" (active, passive). A missing (or null) intra_op
// takes `default_intra_op` (a CPU plugin's recommendation; GPU plugins have none), inter_op 1
// with such a default (else none). Throws mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming the field
// of a value not allowed.
inline ThreadPlan read_thread_plan(const mlh::PlanReader& plan, std::optional<int> default_intra_op) {
  ThreadPlan result;
  result.intra_op = default_intra_op;
  if (default_intra_op) result.inter_op = 1;
  if (auto n = plan.positive_integer("threads.intra_op")) result.intra_op = static_cast<int>(*n);
  if (auto n = plan.positive_integer("threads.inter_op")) result.inter_op = static_cast<int>(*n);
  result.omp_proc_bind = plan.one_of("omp_proc_bind", {"false", "true", "close", "spread", "master"}).value_or("");
  result.omp_wait_policy = plan.one_of("omp_wait_policy", {"active", "passive"}).value_or("");
  return result;
}

inline std::vector<mlh::EnvVar> thread_environment(const ThreadPlan& plan) {
  std::vector<mlh::EnvVar> env;
  if (plan.intra_op) {
    const std::string intra = std::to_string(*plan.intra_op);
    env = {{"OMP_NUM_THREADS", intra}, {"MKL_NUM_THREADS", intra}, {"OPENBLAS_NUM_THREADS", intra}};
  }
  if (plan.inter_op) env.push_back({"MLH_INTEROP_THREADS", std::to_string(*plan.inter_op)});
  if (!plan.omp_proc_bind.empty()) env.push_back({"OMP_PROC_BIND", plan.omp_proc_bind});
  if (!plan.omp_wait_policy.empty()) env.push_back({"OMP_WAIT_POLICY", plan.omp_wait_policy});
  return env;
}

}  // namespace mlhost

