// The settings of the host's execution plan (docs/plan.md), in one table that every reader
// of the plan takes its field names from: the host's planner (which writes them), the
// printed plan (labels), the hardware settings file (its keys), its effects marking (which
// says where a value does nothing), the run's hyperparameters, the training runtime's plan
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
  kBatchSize,
  kGradientCheckpointing,
  kPrecision,
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
  kOmpProcBind,
  kOmpWaitPolicy,
  kCudnnBenchmark,
  kTf32Matmul,
  kDeterministic,
  kChannelsLast,
  kCudaGraphs,
  kMaxSteps,
  kInitFrom,
  kDistributed,
};

// Who knows whether a value does anything on a run. The worker's side: the device and the
// worker's environment decide it whatever the algorithm (threads, allocator, memory caps,
// backend switches). The algorithm: only it knows what it does with the value, and says so
// in describe_run's "plan_fields" (precision, batch size, data loading, ...).
enum class PlanFieldDecider { kWorker, kAlgorithm };

// Whether a run's hyperparameters (TensorBoard's HParams, MLflow's params) record the
// field as "plan.<name>": the values that change what a run learns, not how fast.
enum class RunParameter { kNo, kYes };

// What a hardware settings key (share/mlhost/hardware.ini) accepts besides "auto": every
// entry point checks a value by it (mlh/plan_setting_check.hpp), so a key's type, bounds and
// choices are declared here alone.
enum class SettingKind {
  kSwitch,         // true or false
  kChoice,         // one of `choices`
  kCount,          // an integer, at least `min` (and at most `max` where it is not 0)
  kShare,          // a number in (0, 1]
  kGib,            // a number of GiB above 0
  kName,           // a preset's name: [a-z0-9_-], up to 64 characters
  kAllocatorConf,  // jemalloc's MALLOC_CONF: option:value[,option:value...]
};

struct PlanSetting {
  const char* key = nullptr;
  SettingKind kind = SettingKind::kSwitch;
  long long min = 0, max = 0;  // kCount
  const char* choices = "";    // kChoice: the values, '|'-separated
  const char* max_note = "";   // kCount: why `max`, for the message
};

struct PlanFieldInfo {
  PlanField field;
  const char* name;  // the key in plan.json
  PlanFieldDecider decider;
  const char* label;  // its line in the printed plan (host --print-plan); nullptr: not printed
  // The hardware settings file's keys that set it, with what each accepts; up to five.
  PlanSetting settings[5];
  RunParameter run_parameter;
};

// Every setting, in the order the printed plan and docs/plan.md's "What each field does"
// table list them.
inline constexpr PlanFieldInfo kPlanFields[] = {
    {PlanField::kBatchSize, "batch_size", PlanFieldDecider::kAlgorithm, "batch size",
     {{"batch_size", SettingKind::kCount, 1}}, RunParameter::kYes},
    {PlanField::kGradientCheckpointing, "gradient_checkpointing", PlanFieldDecider::kAlgorithm, "gradient checkpointing",
     {{"gradient_checkpointing"}}, RunParameter::kNo},
    {PlanField::kPrecision, "precision", PlanFieldDecider::kAlgorithm, "precision",
     {{"precision", SettingKind::kChoice, 0, 0, "fp32|fp16|bf16"}}, RunParameter::kYes},
    {PlanField::kPreset, "preset", PlanFieldDecider::kAlgorithm, "model preset",
     {{"preset", SettingKind::kName}}, RunParameter::kYes},
    {PlanField::kThreads, "threads", PlanFieldDecider::kWorker, "threads",
     {{"intra_op_threads", SettingKind::kCount, 1, 4096, "", "beyond any machine's cores"},
      {"inter_op_threads", SettingKind::kCount, 1, 4096, "", "beyond any machine's cores"},
      // keep: a shared machine lowers throughput, never changes the numbers; split: take the
      // cores other runs leave (faster beside them, but another thread count sums differently).
      {"shared_machine_threads", SettingKind::kChoice, 0, 0, "keep|split"}},
     RunParameter::kNo},
    {PlanField::kAllocator, "allocator", PlanFieldDecider::kWorker, "allocator",
     {{"allocator", SettingKind::kChoice, 0, 0, "glibc|glibc-tuned|jemalloc|tcmalloc"},
      // glibc ignores an mmap threshold above 32 MiB (half its largest heap).
      {"malloc_mmap_threshold", SettingKind::kCount, 0, 32LL << 20, "", "32 MiB, glibc's limit"},
      {"malloc_trim_threshold", SettingKind::kCount, 0},
      {"malloc_top_pad", SettingKind::kCount, 0},
      {"jemalloc_conf", SettingKind::kAllocatorConf}},
     RunParameter::kNo},
    {PlanField::kMemoryFraction, "memory_fraction", PlanFieldDecider::kWorker, "memory fraction",
     {{"memory_fraction", SettingKind::kShare}},
     RunParameter::kNo},
    {PlanField::kMemoryLimitBytes, "memory_limit_bytes", PlanFieldDecider::kWorker, "memory limit",
     {{"memory_limit_gb", SettingKind::kGib}},
     RunParameter::kNo},
    {PlanField::kMemory, "memory", PlanFieldDecider::kWorker, nullptr, {}, RunParameter::kNo},
    {PlanField::kEmptyCacheSteps, "empty_cache_steps", PlanFieldDecider::kAlgorithm, "empty cache every",
     {{"empty_cache_steps", SettingKind::kCount, 0}}, RunParameter::kNo},
    {PlanField::kPinnedMemory, "pinned_memory", PlanFieldDecider::kAlgorithm, "pinned memory", {{"pinned_memory"}},
     RunParameter::kNo},
    {PlanField::kDataloaderWorkers, "dataloader_workers", PlanFieldDecider::kAlgorithm, "data workers",
     {{"dataloader_workers", SettingKind::kCount, 0}}, RunParameter::kNo},
    {PlanField::kPrefetchFactor, "prefetch_factor", PlanFieldDecider::kAlgorithm, "prefetch factor",
     {{"prefetch_factor", SettingKind::kCount, 1}},
     RunParameter::kNo},
    {PlanField::kOmpProcBind, "omp_proc_bind", PlanFieldDecider::kWorker, "OpenMP binding",
     {{"omp_proc_bind", SettingKind::kChoice, 0, 0, "false|true|close|spread|master"}},
     RunParameter::kNo},
    {PlanField::kOmpWaitPolicy, "omp_wait_policy", PlanFieldDecider::kWorker, "OpenMP wait policy",
     {{"omp_wait_policy", SettingKind::kChoice, 0, 0, "active|passive"}},
     RunParameter::kNo},
    {PlanField::kCudnnBenchmark, "cudnn_benchmark", PlanFieldDecider::kAlgorithm, "cuDNN benchmark",
     {{"cudnn_benchmark"}},
     RunParameter::kNo},
    {PlanField::kTf32Matmul, "tf32_matmul", PlanFieldDecider::kWorker, "TF32 matmul",
     {{"tf32_matmul"}}, RunParameter::kNo},
    {PlanField::kDeterministic, "deterministic", PlanFieldDecider::kWorker, "deterministic", {{"deterministic"}},
     RunParameter::kNo},
    {PlanField::kChannelsLast, "channels_last", PlanFieldDecider::kAlgorithm, "channels last", {{"channels_last"}},
     RunParameter::kNo},
    {PlanField::kCudaGraphs, "cuda_graphs", PlanFieldDecider::kAlgorithm, "CUDA graphs", {{"cuda_graphs"}},
     RunParameter::kNo},
    {PlanField::kMaxSteps, "max_steps", PlanFieldDecider::kAlgorithm, "max steps", {}, RunParameter::kNo},
    {PlanField::kInitFrom, "init_from", PlanFieldDecider::kAlgorithm, "initial weights", {}, RunParameter::kNo},
    {PlanField::kDistributed, "distributed", PlanFieldDecider::kWorker, "distributed", {}, RunParameter::kNo},
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
