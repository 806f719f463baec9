#include "plan/effects.hpp"

#include "plan/plan_values.hpp"
#include "plan/plan_types.hpp"
#include "probe/torch_backend.hpp"

namespace mlhost {

using mlh::PlanField;
using nlohmann::json;

namespace {

// Whether a value asks for anything: off, zero, none and fp32 (the plain precision) do not,
// so they cannot be without effect.
bool asks_for_something(PlanField field, const json& value) {
  if (value.is_null()) return false;
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_number()) return value.get<double>() != 0;
  if (value.is_string()) return !value.get<std::string>().empty() && !(field == PlanField::kPrecision && value == "fp32");
  if (value.is_object() || value.is_array()) return !value.empty();
  return true;
}

// What the algorithm's describe_run says of `field`: nullopt when it applies it, else why not.
std::optional<std::string> algorithm_no_effect(const char* field, const EffectInputs& in) {
  const json& fields = (*in.run_description)["plan_fields"];
  if (!fields.is_object() || !fields.contains(field))
    return in.algorithm + " does not use it (its describe_run lists the plan fields it reads)";
  const json& use = fields[field];
  if (use.is_object() && use.contains("no_effect") && use["no_effect"].is_string())
    return use["no_effect"].get<std::string>();
  return std::nullopt;
}

const json& field_value(const json& plan, PlanField field) {
  static const json null;
  const auto it = plan.find(mlh::plan_field_name(field));
  return it == plan.end() ? null : *it;
}

}  // namespace

std::optional<std::string> device_no_effect(PlanField field, const json& plan, const EffectInputs& in) {
  const Device& d = *in.device;
  if (!asks_for_something(field, field_value(plan, field))) return std::nullopt;
  const std::string id = d.id();
  // What a value does is up to the worker's LibTorch, which sees the torch device, not the
  // plugin's kind: a third-party "cpuset" device runs on LibTorch's cpu and is capped like it
  // (the planner reads the same table for the defaults, so they agree).
  const TorchBackend& backend = torch_backend(d);
  using MemoryCap = TorchBackend::MemoryCap;
  switch (field) {
    case PlanField::kPinnedMemory:
      if (!backend.accelerator) return "batches are in host memory already on " + id;
      if (!backend.pinned_copies) return "LibTorch pins host memory for copies to CUDA GPUs only (" + id + " runs on torch device '" + d.torch_device + "')";
      break;
    case PlanField::kCudnnBenchmark:
      if (!backend.cudnn) return "cuDNN runs on CUDA GPUs only";
      break;
    case PlanField::kCudaGraphs:
      if (!backend.graphs) return "CUDA graphs run on CUDA GPUs only";
      break;
    case PlanField::kTf32Matmul:
      if (!backend.tf32) return "TF32 is a mode of CUDA GPUs (compute capability 8.0 or newer)";
      if (!(d.fast_precisions & MLH_PRECISION_TF32)) return id + " has no TF32 (it needs compute capability 8.0)";
      break;
    case PlanField::kMemory:
      if (backend.memory_cap != MemoryCap::kCachingAllocator) return "PYTORCH_CUDA_ALLOC_CONF is read by CUDA's caching allocator only";
      break;
    case PlanField::kEmptyCacheSteps:
      if (!backend.accelerator) return "the CPU keeps no device cache to release";
      if (in.algorithm_torch &&
          !torch_version_at_least(*in.algorithm_torch, backend.cache_release_torch[0], backend.cache_release_torch[1]))
        return "LibTorch " + *in.algorithm_torch + " cannot release the " + backend.name + " cache (" +
               std::to_string(backend.cache_release_torch[0]) +
               (backend.cache_release_torch[1] ? "." + std::to_string(backend.cache_release_torch[1]) : ".x") + " can)";
      if (!backend.device_cache) return "mlhost releases the caches of CUDA and MPS devices only";
      break;
    case PlanField::kMemoryFraction:
    case PlanField::kMemoryLimitBytes:
      if (backend.memory_cap == MemoryCap::kNone)
        return "mlhost enforces memory limits on LibTorch's cpu, cuda and mps devices only (" + id +
               " runs on torch device '" + d.torch_device + "')";
      if (field == PlanField::kMemoryLimitBytes && backend.memory_cap == MemoryCap::kWatermark)
        return "MPS is capped by memory_fraction, a share of Metal's recommended working set, not in bytes";
      break;
    case PlanField::kDistributed:
      // A backend this table does not know is left to the plugin's no_distributed.
      if (!backend.distributed && *backend.type)
        return std::string("neither Gloo nor NCCL carries ") + backend.name +
               " tensors (a distributed launch is refused)";
      break;
    case PlanField::kPrefetchFactor:
      if (!asks_for_something(PlanField::kDataloaderWorkers, field_value(plan, PlanField::kDataloaderWorkers)))
        return "no data workers (dataloader_workers 0): each batch is made when the step needs it";
      break;
    default:
      break;
  }
  return std::nullopt;
}

void mark_plan_effects(PlanWriter& plan, const EffectInputs& in) {
  json no_effect = json::object();
  for (const mlh::PlanFieldInfo& f : mlh::kPlanFields) {
    if (!plan.has(f.field) || !asks_for_something(f.field, plan.value(f.field))) continue;
    std::optional<std::string> why = device_no_effect(f.field, plan.view(), in);
    if (!why && f.decider == mlh::PlanFieldDecider::kAlgorithm && in.run_description)
      why = algorithm_no_effect(f.name, in);
    if (!why) continue;
    no_effect[f.name] = *why;
    const Source& source = plan.source(f.field);
    if (f.field == PlanField::kBatchSize && source.kind == SourceKind::kCommandLine)
      throw PlanError("--batch-size " + plan.value(f.field).dump() + ": " + *why);
    // A warm start that silently did not happen would train from scratch under a wrong name.
    if (f.field == PlanField::kInitFrom && source.kind == SourceKind::kCommandLine)
      throw PlanError("--init-from '" + plan.value(f.field).value("path", "") + "': " + *why);
    if (chosen_by_user(source.kind))
      plan.add_warning(std::string(f.name) + " = " + plan.value(f.field).dump() + " (" + source.text +
                       ") has no effect on this run: " + *why);
  }
  plan.set_fact("no_effect", no_effect);
  if (in.run_description && in.run_description->value("model", json()).is_object())
    plan.set_fact("model", (*in.run_description)["model"]);
  if (!in.algorithm.empty()) plan.set_fact("effects_declared", in.run_description != nullptr);
}

}  // namespace mlhost
