#include "plan/effects.hpp"

#include "plan/plan.hpp"

namespace mlhost {

using nlohmann::json;

const std::vector<PlanSettingField>& plan_setting_fields() {
  static const std::vector<PlanSettingField> fields = {
      {"precision", true},         {"batch_size", true},      {"gradient_checkpointing", true},
      {"preset", true},            {"threads", false},        {"allocator", false},
      {"memory_fraction", false},  {"memory_limit_bytes", false}, {"memory", false},
      {"empty_cache_steps", true}, {"pinned_memory", true},   {"dataloader_workers", true},
      {"prefetch_factor", true},   {"channels_last", true},   {"omp_proc_bind", false},
      {"omp_wait_policy", false},  {"cudnn_benchmark", true}, {"tf32_matmul", false},
      {"deterministic", false},    {"distributed", false},
  };
  return fields;
}

namespace {

// Whether a value asks for anything: off, zero, none and fp32 (the plain precision) do not,
// so they cannot be without effect.
bool asks_for_something(const std::string& field, const json& value) {
  if (value.is_null()) return false;
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_number()) return value.get<double>() != 0;
  if (value.is_string()) return !value.get<std::string>().empty() && !(field == "precision" && value == "fp32");
  if (value.is_object() || value.is_array()) return !value.empty();
  return true;
}

bool is_kind(const Device& d, const char* kind) { return d.kind == kind; }

// Set explicitly by the user (not a rule, a default, the device or a measurement).
bool user_set(const std::string& source) {
  for (const char* prefix : {"command line", "settings file", "config"})
    if (source.rfind(prefix, 0) == 0) return true;
  return false;
}

// What the algorithm's describe_run says of `field`: nullopt when it applies it, else why not.
std::optional<std::string> algorithm_no_effect(const std::string& field, const EffectInputs& in) {
  const json& fields = (*in.run_description)["plan_fields"];
  if (!fields.is_object() || !fields.contains(field))
    return in.algorithm + " does not use it (its describe_run lists the plan fields it reads)";
  const json& use = fields[field];
  if (use.is_object() && use.contains("no_effect") && use["no_effect"].is_string())
    return use["no_effect"].get<std::string>();
  return std::nullopt;
}

}  // namespace

std::optional<std::string> device_no_effect(const std::string& field, const json& plan, const EffectInputs& in) {
  const Device& d = *in.device;
  if (!plan.contains(field) || !asks_for_something(field, plan[field])) return std::nullopt;
  const std::string id = d.id();
  const bool cuda = is_kind(d, "cuda"), cpu = is_kind(d, "cpu"), mps = is_kind(d, "mps");
  if (field == "pinned_memory" && !cuda) {
    if (cpu) return "batches are in host memory already on " + id;
    return "LibTorch pins host memory for copies to CUDA GPUs only (" + id + " is " + d.kind + ")";
  }
  if (field == "cudnn_benchmark" && !cuda) return "cuDNN runs on CUDA GPUs only";
  if (field == "tf32_matmul") {
    if (!cuda) return "TF32 is a mode of CUDA GPUs (compute capability 8.0 or newer)";
    if (!(d.fast_precisions & MLH_PRECISION_TF32)) return id + " has no TF32 (it needs compute capability 8.0)";
  }
  if (field == "memory" && !cuda) return "PYTORCH_CUDA_ALLOC_CONF is read by CUDA's caching allocator only";
  if (field == "empty_cache_steps") {
    if (cpu) return "the CPU keeps no device cache to release";
    if (mps && in.algorithm_torch && !torch_version_at_least(*in.algorithm_torch, 2, 0))
      return "LibTorch " + *in.algorithm_torch + " cannot release the MPS cache (2.x can)";
    if (!cuda && !mps) return "mlhost releases the caches of CUDA and MPS devices only";
  }
  if ((field == "memory_fraction" || field == "memory_limit_bytes") && !cuda && !cpu && !mps)
    return "mlhost enforces memory limits on cpu, cuda and mps devices only";
  if (field == "memory_limit_bytes" && mps)
    return "MPS is capped by memory_fraction, a share of Metal's recommended working set, not in bytes";
  if (field == "distributed" && mps) return "neither Gloo nor NCCL carries MPS tensors (a distributed launch is refused)";
  if (field == "prefetch_factor" && !asks_for_something("dataloader_workers", plan.value("dataloader_workers", json())))
    return "no data workers (dataloader_workers 0): each batch is made when the step needs it";
  return std::nullopt;
}

void mark_plan_effects(json& plan, const EffectInputs& in) {
  json no_effect = json::object();
  json warnings = plan.value("warnings", json::array());
  const json& sources = plan["sources"];
  for (const PlanSettingField& f : plan_setting_fields()) {
    if (!plan.contains(f.name) || !asks_for_something(f.name, plan[f.name])) continue;
    std::optional<std::string> why = device_no_effect(f.name, plan, in);
    if (!why && f.algorithm_decides && in.run_description) why = algorithm_no_effect(f.name, in);
    if (!why) continue;
    no_effect[f.name] = *why;
    const std::string source = sources.value(f.name, "");
    if (f.name == "batch_size" && source == "command line --batch-size")
      throw PlanError("--batch-size " + plan["batch_size"].dump() + ": " + *why);
    if (user_set(source)) {
      const std::string warning = f.name + " = " + plan[f.name].dump() + " (" + source + ") has no effect on this run: " + *why;
      warnings.push_back(warning);
    }
  }
  plan["no_effect"] = no_effect;
  if (!warnings.empty()) plan["warnings"] = warnings;
  if (in.run_description && (*in.run_description).value("model", json()).is_object())
    plan["model"] = (*in.run_description)["model"];
  if (!in.algorithm.empty()) plan["effects_declared"] = in.run_description != nullptr;
}

}  // namespace mlhost
