// The thread settings a plan asks for, as the environment variables that OpenMP, MKL,
// OpenBLAS and the training runtime read when LibTorch starts.
#pragma once

#include <mlh/plugin.hpp>
#include <string>
#include <vector>

namespace mlh::cpu {

struct ThreadPlan {
  int intra_op = 1;
  int inter_op = 1;
  std::string omp_proc_bind;    // "" when the plan leaves it to the OpenMP runtime
  std::string omp_wait_policy;  // likewise
};

// Reads "threads": {"intra_op": N, "inter_op": M}, "omp_proc_bind" (false, true, close,
// spread, master) and "omp_wait_policy" (active, passive) from the plan. A missing (or null)
// field takes the default: `recommended_intra_op` threads intra-op, 1 inter-op, the OpenMP
// runtime's binding and wait policy. Throws mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming the
// field when the plan is not a JSON object or a value is not allowed.
ThreadPlan read_thread_plan(const std::string& plan_json, int recommended_intra_op);

// OMP_NUM_THREADS, MKL_NUM_THREADS and OPENBLAS_NUM_THREADS = intra_op;
// MLH_INTEROP_THREADS = inter_op; OMP_PROC_BIND and OMP_WAIT_POLICY when the plan sets them.
std::vector<EnvVar> thread_environment(const ThreadPlan& plan);

}  // namespace mlh::cpu
