#include "cpu_prepare.hpp"

#include <algorithm>

#include <mlh/plan_reader.hpp>

namespace mlh::cpu {

ThreadPlan read_thread_plan(const std::string& plan_json, int recommended_intra_op) {
  const PlanReader plan(plan_json);
  ThreadPlan result{std::max(1, recommended_intra_op), 1, "", ""};
  if (auto n = plan.positive_integer("threads.intra_op")) result.intra_op = static_cast<int>(*n);
  if (auto n = plan.positive_integer("threads.inter_op")) result.inter_op = static_cast<int>(*n);
  result.omp_proc_bind = plan.one_of("omp_proc_bind", {"false", "true", "close", "spread", "master"}).value_or("");
  result.omp_wait_policy = plan.one_of("omp_wait_policy", {"active", "passive"}).value_or("");
  return result;
}

std::vector<EnvVar> thread_environment(const ThreadPlan& plan) {
  std::string intra = std::to_string(plan.intra_op), inter = std::to_string(plan.inter_op);
  std::vector<EnvVar> env = {{"OMP_NUM_THREADS", intra},
                             {"MKL_NUM_THREADS", intra},
                             {"OPENBLAS_NUM_THREADS", intra},
                             {"MLH_INTEROP_THREADS", inter}};
  if (!plan.omp_proc_bind.empty()) env.push_back({"OMP_PROC_BIND", plan.omp_proc_bind});
  if (!plan.omp_wait_policy.empty()) env.push_back({"OMP_WAIT_POLICY", plan.omp_wait_policy});
  return env;
}

}  // namespace mlh::cpu
