// DEPRECATED: kept so that device plugins written against the SDK of ABI 1.1 (commit 92d6261)
// still compile. Removed no earlier than the SDK's next major version: docs/sdk-changelog.md
// (installed as <prefix>/share/doc/mlhost/docs/sdk-changelog.md) says what to use instead.
//
// The host now sets the worker's thread variables (OMP_NUM_THREADS, MKL_NUM_THREADS,
// OPENBLAS_NUM_THREADS, MLH_INTEROP_THREADS, OMP_PROC_BIND, OMP_WAIT_POLICY) from the plan for
// every device (docs/plan.md, "environment"), and ignores them in what a device plugin's
// prepare() returns. So thread_environment() returns nothing; read_thread_plan() still reads
// the plan as it did, for a plugin that wants the numbers themselves.
#ifndef MLH_SDK_THREAD_ENV_HPP
#define MLH_SDK_THREAD_ENV_HPP

#include <optional>
#include <string>
#include <vector>

#include "plan_reader.hpp"
#include "plugin.hpp"

namespace mlh {

// What read_thread_plan() read of the plan. Not marked deprecated itself: GCC would then warn
// in read_thread_plan's body below, in every plugin that includes this header; the functions
// that take or return it are.
struct ThreadPlan {
  std::optional<int> intra_op;  // unset: the plan has none and no default was given
  std::optional<int> inter_op;  // likewise
  std::string omp_proc_bind;    // "" when the plan leaves it to the OpenMP runtime
  std::string omp_wait_policy;  // likewise
};

// Reads "threads": {"intra_op": N, "inter_op": M}, "omp_proc_bind" and "omp_wait_policy" as
// before; a missing intra_op takes `default_intra_op`, inter_op 1 with such a default. Throws
// mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming a field whose value is not allowed.
[[deprecated(
    "mlh::read_thread_plan: the host sets the worker's threads from the plan; to read them yourself use "
    "mlh::PlanReader::positive_integer(\"threads.intra_op\") and mlh::PlanReader::one_of(\"omp_proc_bind\", ...) "
    "instead (docs/sdk-changelog.md)")]]
inline ThreadPlan read_thread_plan(const PlanReader& plan, std::optional<int> default_intra_op) {
  ThreadPlan result;
  result.intra_op = default_intra_op;
  if (default_intra_op) result.inter_op = 1;
  if (auto n = plan.positive_integer("threads.intra_op")) result.intra_op = static_cast<int>(*n);
  if (auto n = plan.positive_integer("threads.inter_op")) result.inter_op = static_cast<int>(*n);
  result.omp_proc_bind = plan.one_of("omp_proc_bind", {"false", "true", "close", "spread", "master"}).value_or("");
  result.omp_wait_policy = plan.one_of("omp_wait_policy", {"active", "passive"}).value_or("");
  return result;
}

// Returns no variables: the host sets the thread variables for every worker (see above).
[[deprecated(
    "mlh::thread_environment is a no-op: the host sets the worker's thread variables from the plan for every "
    "device; return only your device's own variables from mlh::DevicePlugin::prepare() instead "
    "(docs/sdk-changelog.md)")]]
inline std::vector<EnvVar> thread_environment(const ThreadPlan& /*plan*/) {
  return {};
}

}  // namespace mlh

#endif  // MLH_SDK_THREAD_ENV_HPP
