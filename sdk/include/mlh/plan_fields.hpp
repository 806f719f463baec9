// The settings of the host's execution plan (docs/plan.md), in one table that every reader
// of the plan takes its field names from: the host's planner (which writes them), its
// effects marking (which says where a value does nothing), the training runtime's plan
// reader (mlh::rt::RuntimePlan::parse) and the check that docs/plan.md has a row for each.
// A plan also holds facts that are not settings (the device, sources, no_effect, the
// model); those are not in the table.
//
// Header-only and free of LibTorch: the host, device plugins and the runtime all include it.
#ifndef MLH_PLAN_FIELDS_HPP
#define MLH_PLAN_FIELDS_HPP

#include <cstddef>
#include <string>

namespace mlh {

enum class PlanField {
  kPrecision,
  kBatchSize,
  kGradientCheckpointing,
  kPreset,
  kThreads,
  kAllocator,
  kMemoryFraction,
  kMemoryLimitBytes,
  kMemory,
  kEmptyCacheSteps,
  kPinnedMemory,
  kDataloaderWorkers,
  kPrefetchFactor,
  kChannelsLast,
  kOmpProcBind,
  kOmpWaitPolicy,
  kCudnnBenchmark,
  kTf32Matmul,
  kDeterministic,
  kDistributed,
  kMaxSteps,
  kInitFrom,
};

// Who knows whether a value does anything on a run. The worker's side: the device and the
// worker's environment decide it whatever the algorithm (threads, allocator, memory caps,
// backend switches). The algorithm: only it knows what it does with the value, and says so
// in describe_run's "plan_fields" (precision, batch size, data loading, ...).
enum class PlanFieldDecider { kWorker, kAlgorithm };

struct PlanFieldInfo {
  PlanField field;
  const char* name;  // the key in plan.json
  PlanFieldDecider decider;
};

// Every setting, in the order docs/plan.md's "What each field does" table lists them.
inline constexpr PlanFieldInfo kPlanFields[] = {
    {PlanField::kPrecision, "precision", PlanFieldDecider::kAlgorithm},
    {PlanField::kBatchSize, "batch_size", PlanFieldDecider::kAlgorithm},
    {PlanField::kGradientCheckpointing, "gradient_checkpointing", PlanFieldDecider::kAlgorithm},
    {PlanField::kPreset, "preset", PlanFieldDecider::kAlgorithm},
    {PlanField::kThreads, "threads", PlanFieldDecider::kWorker},
    {PlanField::kAllocator, "allocator", PlanFieldDecider::kWorker},
    {PlanField::kMemoryFraction, "memory_fraction", PlanFieldDecider::kWorker},
    {PlanField::kMemoryLimitBytes, "memory_limit_bytes", PlanFieldDecider::kWorker},
    {PlanField::kMemory, "memory", PlanFieldDecider::kWorker},
    {PlanField::kEmptyCacheSteps, "empty_cache_steps", PlanFieldDecider::kAlgorithm},
    {PlanField::kPinnedMemory, "pinned_memory", PlanFieldDecider::kAlgorithm},
    {PlanField::kDataloaderWorkers, "dataloader_workers", PlanFieldDecider::kAlgorithm},
    {PlanField::kPrefetchFactor, "prefetch_factor", PlanFieldDecider::kAlgorithm},
    {PlanField::kChannelsLast, "channels_last", PlanFieldDecider::kAlgorithm},
    {PlanField::kOmpProcBind, "omp_proc_bind", PlanFieldDecider::kWorker},
    {PlanField::kOmpWaitPolicy, "omp_wait_policy", PlanFieldDecider::kWorker},
    {PlanField::kCudnnBenchmark, "cudnn_benchmark", PlanFieldDecider::kAlgorithm},
    {PlanField::kTf32Matmul, "tf32_matmul", PlanFieldDecider::kWorker},
    {PlanField::kDeterministic, "deterministic", PlanFieldDecider::kWorker},
    {PlanField::kDistributed, "distributed", PlanFieldDecider::kWorker},
    {PlanField::kMaxSteps, "max_steps", PlanFieldDecider::kAlgorithm},
    {PlanField::kInitFrom, "init_from", PlanFieldDecider::kAlgorithm},
};

inline constexpr size_t kPlanFieldCount = sizeof kPlanFields / sizeof kPlanFields[0];

// The row of `field` (the table is in enum order, which a test checks).
inline constexpr const PlanFieldInfo& plan_field(PlanField field) { return kPlanFields[static_cast<size_t>(field)]; }

// Its key in plan.json: plan[mlh::plan_field_name(mlh::PlanField::kChannelsLast)].
inline constexpr const char* plan_field_name(PlanField field) { return plan_field(field).name; }

// The row named `name`, or nullptr for a name that is not a setting.
inline const PlanFieldInfo* find_plan_field(const std::string& name) {
  for (const PlanFieldInfo& info : kPlanFields)
    if (name == info.name) return &info;
  return nullptr;
}

}  // namespace mlh

#endif  // MLH_PLAN_FIELDS_HPP
