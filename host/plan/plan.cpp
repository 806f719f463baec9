#include "plan/plan.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "plan/allocator.hpp"
#include "probe/ranking.hpp"

namespace mlhost {

using nlohmann::json;

namespace {

bool is_gpu(const Device& d) {
  return d.device_class == MLH_DEVICE_CLASS_DISCRETE_GPU || d.device_class == MLH_DEVICE_CLASS_UNIFIED_GPU;
}

// Collects values and where each came from.
class PlanBuilder {
 public:
  PlanBuilder(const PlanInputs& in) : in_(in), d_(*in.device) {}

  // The settings-file value of `key` for this device, if set (not "auto").
  std::optional<Setting> setting(const std::string& key) const {
    return in_.settings ? in_.settings->get(key, d_.kind) : std::nullopt;
  }
  void set(const std::string& key, json value, const std::string& source) {
    plan_[key] = std::move(value);
    sources_[key] = source;
  }
  // A setting from the file, else `fallback` with its own source.
  template <class Parse>
  void from_settings_or(const std::string& key, Parse parse, json fallback, const std::string& source) {
    if (auto s = setting(key))
      set(key, parse(s->value), "settings file " + s->origin);
    else
      set(key, std::move(fallback), source);
  }

  json finish() {
    plan_["sources"] = sources_;
    return plan_;
  }

  const PlanInputs& in_;
  const Device& d_;
  json plan_ = json::object();
  json sources_ = json::object();
};

bool parse_bool(const std::string& v) { return v == "true"; }
json parse_int(const std::string& v) { return std::stoll(v); }

std::string precision_words(uint32_t mask) {
  std::string out;
  for (const auto& p : precision_names(mask)) out += (out.empty() ? "" : ", ") + p;
  return out;
}

uint32_t precision_bit(const std::string& p) {
  if (p == "fp16") return MLH_PRECISION_FP16;
  if (p == "bf16") return MLH_PRECISION_BF16;
  return MLH_PRECISION_FP32;
}

void plan_precision(PlanBuilder& b) {
  const Device& d = b.d_;
  std::string chosen, source;
  if (b.in_.precision && *b.in_.precision != "auto") {
    chosen = *b.in_.precision;
    source = "command line --precision";
  } else if (auto s = b.setting("precision")) {
    chosen = s->value;
    source = "settings file " + s->origin;
  }
  if (chosen.empty() && b.in_.calibration && b.in_.calibration->varies("precision")) {
    b.set("precision", b.in_.calibration->chosen.precision, calibrated_source(*b.in_.calibration, "precision"));
    return;
  }
  if (!chosen.empty()) {
    const bool mps = d.kind == "mps";
    if (!(d.precisions & precision_bit(chosen)))
      throw PlanError("precision " + chosen + " (" + source + ") is not supported on " + d.id() + " (supports " +
                      precision_words(d.precisions) + ")" +
                      (mps && chosen == "bf16" ? "; bf16 on MPS needs macOS 14 or later" : ""));
    if (mps && chosen == "bf16" && b.in_.algorithm_torch && !torch_version_at_least(*b.in_.algorithm_torch, 2, 6))
      throw PlanError("precision bf16 (" + source + ") on " + d.id() + " needs LibTorch 2.6 or later, the first with bf16 "
                      "autocast on MPS; the algorithm was built with LibTorch " + *b.in_.algorithm_torch);
    if (chosen == "fp16" && (d.limitations & MLH_LIMIT_NO_FP16_AUTOCAST))
      throw PlanError("precision fp16 (" + source + ") is not used on " + d.id() +
                      ": its fp16 autocast is unreliable; use fp32");
    b.set("precision", chosen, source);
    return;
  }
  // auto: bf16 where a GPU runs it fast, else fp16 on a GPU that has it, else fp32. On CPUs
  // bf16 pays off only for some models, so auto keeps fp32 there.
  if (is_gpu(d) && (d.fast_precisions & MLH_PRECISION_BF16))
    b.set("precision", "bf16", "auto: " + d.id() + " runs bf16 fast");
  else if (is_gpu(d) && (d.precisions & MLH_PRECISION_FP16) && !(d.limitations & MLH_LIMIT_NO_FP16_AUTOCAST))
    b.set("precision", "fp16", "auto: " + d.id() + " has fp16 but no fast bf16");
  else
    b.set("precision", "fp32", is_gpu(d) ? "auto: no usable reduced precision on " + d.id()
                                         : "auto: fp32 on CPU (bf16 only where an algorithm measured it faster)");
}

// The batch_size of the preset the user chose in the config (a task preset sized for its
// task, e.g. trm's sudoku-easy), or nullptr.
const json* user_preset_batch_size(const PlanBuilder& b, bool algorithm_has_batch) {
  const json* cfg = b.in_.user_config;
  if (!algorithm_has_batch || !cfg || !cfg->contains("preset") || !(*cfg)["preset"].is_string()) return nullptr;
  const json& presets = b.in_.description->at("presets");
  auto it = presets.find((*cfg)["preset"].get<std::string>());
  if (it == presets.end() || !it->is_object() || !it->contains("batch_size")) return nullptr;
  return &(*it)["batch_size"];
}

void plan_rule_values(PlanBuilder& b) {
  const Device& d = b.d_;
  const AutoRule* rule = b.in_.rules ? match_rule(*b.in_.rules, d) : nullptr;
  const std::string rule_source = rule ? "rule: " + rule->describe() + " (" + rule->origin + ")" : "";
  const json* cfg = b.in_.user_config;
  const json* schema = b.in_.description ? &(*b.in_.description)["config_schema"] : nullptr;
  const bool algorithm_has_batch = schema && schema->contains("properties") && (*schema)["properties"].contains("batch_size");

  // Batch size: the command line (a number, or auto: the finder), the user's config of the
  // algorithm, the settings file, the rule, the algorithm's default.
  if (b.in_.batch_search) {
    b.set("batch_size", (*b.in_.batch_search)["batch"], "batch size finder: " + b.in_.batch_search->value("reason", std::string()));
    json finder = *b.in_.batch_search;
    finder["status"] = b.in_.batch_search_status;
    b.plan_["batch_size_finder"] = finder;
  } else if (b.in_.batch_size)
    b.set("batch_size", *b.in_.batch_size, "command line --batch-size");
  else if (algorithm_has_batch && cfg && cfg->contains("batch_size"))
    b.set("batch_size", (*cfg)["batch_size"], "config (batch_size)");
  else if (const json* preset_batch = user_preset_batch_size(b, algorithm_has_batch))
    b.set("batch_size", *preset_batch, "preset " + (*cfg)["preset"].get<std::string>() + " (batch_size)");
  else if (auto s = b.setting("batch_size"))
    b.set("batch_size", parse_int(s->value), "settings file " + s->origin);
  else if (rule && rule->batch_size)
    b.set("batch_size", *rule->batch_size, rule_source);
  else if (algorithm_has_batch && b.in_.description->at("config_defaults").contains("batch_size"))
    b.set("batch_size", b.in_.description->at("config_defaults")["batch_size"], "algorithm default");
  else
    b.set("batch_size", nullptr, "no rule for " + d.id());
  // --print-plan with --batch-size auto and nothing cached for this config yet.
  if (!b.in_.batch_search && !b.in_.batch_search_status.empty())
    b.sources_["batch_size"] = b.sources_["batch_size"].get<std::string>() + " (--batch-size auto: " +
                               b.in_.batch_search_status + ")";

  if (auto s = b.setting("gradient_checkpointing"))
    b.set("gradient_checkpointing", parse_bool(s->value), "settings file " + s->origin);
  else if (rule && rule->gradient_checkpointing)
    b.set("gradient_checkpointing", *rule->gradient_checkpointing, rule_source);
  else
    b.set("gradient_checkpointing", false, "default");

  // Preset: only one the algorithm describes means anything.
  const json* presets = b.in_.description ? &(*b.in_.description)["presets"] : nullptr;
  std::optional<std::string> preset;
  std::string preset_source;
  if (cfg && cfg->contains("preset") && (*cfg)["preset"].is_string()) {
    preset = (*cfg)["preset"].get<std::string>();
    preset_source = "config (preset)";
  } else if (auto s = b.setting("preset")) {
    preset = s->value;
    preset_source = "settings file " + s->origin;
  } else if (rule && rule->preset) {
    preset = rule->preset;
    preset_source = rule_source;
  }
  if (!presets) {
    b.set("preset", preset ? json(*preset) : json(nullptr), preset ? preset_source : "default");
  } else if (preset && presets->contains(*preset)) {
    b.set("preset", *preset, preset_source);
    // A preset may say how large its model is ("$parameters"), for the printed plan.
    const json& chosen = (*presets)[*preset];
    if (chosen.is_object() && chosen.contains("$parameters")) b.plan_["parameters"] = chosen["$parameters"];
  } else if (preset && preset_source.rfind("rule", 0) != 0) {
    std::string known;
    for (const auto& [name, unused] : presets->items()) known += (known.empty() ? "" : ", ") + name;
    throw PlanError("preset '" + *preset + "' (" + preset_source + ") is not one of the algorithm's presets (" +
                    (known.empty() ? "none" : known) + ")");
  } else {
    b.set("preset", nullptr, preset ? "the algorithm has no preset '" + *preset + "'" : "default");
  }
}

void plan_threads(PlanBuilder& b) {
  const Device& d = b.d_;
  json threads = json::object();
  std::string source;
  if (auto s = b.setting("intra_op_threads")) {
    threads["intra_op"] = parse_int(s->value);
    source = "settings file " + s->origin;
  } else if (b.in_.calibration && b.in_.calibration->varies("threads")) {
    threads["intra_op"] = b.in_.calibration->chosen.threads;
    source = calibrated_source(*b.in_.calibration, "threads");
  } else if (d.recommended_threads > 0) {
    threads["intra_op"] = d.recommended_threads;
    source = "device: recommended by the " + d.plugin + " plugin";
  } else {
    threads["intra_op"] = std::max<long>(1, sysconf(_SC_NPROCESSORS_ONLN));
    source = "default: all online CPUs";
  }
  // Inter-op pools only help graphs with independent branches, and compete with intra-op
  // threads on small machines.
  if (auto s = b.setting("inter_op_threads")) {
    threads["inter_op"] = parse_int(s->value);
    source += "; inter-op: settings file " + s->origin;
  } else {
    threads["inter_op"] = 1;
  }
  b.set("threads", threads, source);
}

// The memory a run may use. GPUs: a fraction of the device's memory for the caching
// allocator (none by default: the whole GPU). CPUs: a cap on LibTorch's tensor memory
// (runtime memory_limit.hpp), 90% of the memory by default, leaving a margin for the system.
// memory_limit_gb caps either in GiB as well; the smaller cap counts.
void plan_memory_limit(PlanBuilder& b) {
  const Device& d = b.d_;
  const bool cuda_like = d.device_class == MLH_DEVICE_CLASS_DISCRETE_GPU;
  const bool cpu = d.device_class == MLH_DEVICE_CLASS_CPU;
  const bool known_total = d.memory_total_bytes != MLH_UNKNOWN && d.memory_total_bytes > 0;
  std::optional<double> fraction;
  std::string source;
  if (auto s = b.setting("memory_fraction")) {
    fraction = std::stod(s->value);
    source = "settings file " + s->origin;
  } else if (cpu) {
    fraction = 0.9;
    source = "default: 90% of the memory, a margin for the system";
  }
  if (auto s = b.setting("memory_limit_gb")) {
    const double gib = std::stod(s->value);
    if (!known_total)
      throw PlanError("memory_limit_gb (settings file " + s->origin + "): the memory of " + d.id() + " is unknown");
    const double as_fraction = std::min(1.0, gib * static_cast<double>(1LL << 30) / static_cast<double>(d.memory_total_bytes));
    if (!fraction || as_fraction < *fraction) {
      fraction = as_fraction;
      source = "settings file " + s->origin + " (" + s->value + " GiB)";
    }
  }
  if (!fraction) {
    b.set("memory_fraction", nullptr, "default: no limit");
  } else {
    b.set("memory_fraction", *fraction, source);
    // Under a memory cap, PyTorch's CUDA allocator should give cached blocks back before it
    // reaches the cap rather than fail: its garbage_collection_threshold does that.
    if (cuda_like)
      b.set("memory", {{"garbage_collection_threshold", 0.8}}, "default: reclaim cached memory under memory_fraction");
  }
  // The cap in bytes where the fraction is of the device's memory: the CPU's tensor-memory cap,
  // CUDA's caching allocator. (MPS's high watermark is a share of Metal's recommended working
  // set, which the probe does not know.)
  if ((cpu || cuda_like) && fraction && known_total)
    b.set("memory_limit_bytes", std::llround(*fraction * static_cast<double>(d.memory_total_bytes)),
          "memory_fraction x " + format_bytes(d.memory_total_bytes) +
              (cpu ? " (CPU tensor memory)" : " (the caching allocator's cap)"));
}

void plan_memory_and_data(PlanBuilder& b) {
  const Device& d = b.d_;
  const bool cuda_like = d.device_class == MLH_DEVICE_CLASS_DISCRETE_GPU;
  plan_memory_limit(b);
  b.from_settings_or("empty_cache_steps", parse_int, 0, "default: never");
  b.from_settings_or("pinned_memory", parse_bool, cuda_like, cuda_like ? "default: on for a discrete GPU" : "default: off");
  b.from_settings_or("prefetch_factor", parse_int, 2, "default");
  // On a CPU run, loader workers would take cores from the computation itself.
  const long cpus = std::max<long>(1, sysconf(_SC_NPROCESSORS_ONLN));
  const long workers = is_gpu(d) ? std::min<long>(4, std::max<long>(1, cpus / 2)) : 0;
  b.from_settings_or("dataloader_workers", parse_int, workers,
                     is_gpu(d) ? "default: half the CPUs, at most 4" : "default: none on a CPU run");
}

void plan_backend_switches(PlanBuilder& b) {
  const Device& d = b.d_;
  auto text = [](const std::string& v) { return json(v); };
  b.from_settings_or("omp_proc_bind", text, nullptr, "default: the OpenMP runtime's");
  b.from_settings_or("omp_wait_policy", text, nullptr, "default: the OpenMP runtime's");
  const bool cuda = d.kind == "cuda";
  b.from_settings_or("cudnn_benchmark", parse_bool, cuda, cuda ? "default: on for CUDA" : "default: off (cuDNN is CUDA's)");
  const bool tf32 = (d.fast_precisions & MLH_PRECISION_TF32) != 0;
  b.from_settings_or("tf32_matmul", parse_bool, tf32, tf32 ? "default: the device has TF32" : "default: no TF32 here");
  b.from_settings_or("deterministic", parse_bool, false, "default");
  // cuDNN's fastest convolutions (tensor cores, reduced precision) read NHWC; the CPU's
  // convolutions gain little from it and pay conversions.
  b.from_settings_or("channels_last", parse_bool, cuda,
                     cuda ? "default: on for CUDA (cuDNN's tensor-core convolutions want NHWC)" : "default: off");
}

// The worker's allocator: the command line, the settings file, else jemalloc. A preloaded
// allocator whose library is missing falls back (allocator_fallbacks), and the source says so.
void plan_allocator(PlanBuilder& b) {
  std::string asked, source;
  if (b.in_.allocator && *b.in_.allocator != "auto") {
    asked = *b.in_.allocator;
    source = "command line --allocator";
  } else if (auto s = b.setting("allocator")) {
    asked = s->value;
    source = "settings file " + s->origin;
  } else if (b.in_.calibration && b.in_.calibration->varies("allocator")) {
    asked = b.in_.calibration->chosen.allocator;
    source = calibrated_source(*b.in_.calibration, "allocator");
  }
  if (built_with_address_sanitizer()) {
    b.set("allocator", {{"name", "glibc"}},
          "AddressSanitizer build: the sanitizer owns malloc" + (asked.empty() ? "" : " (" + asked + " from " + source + " not used)"));
    return;
  }
  if (asked.empty()) {
    asked = "jemalloc";
    source = "default: glibc's own thresholds unmap large tensors after every step";
  }
  std::vector<std::string> chain{asked};
  for (const std::string& fallback : allocator_fallbacks(asked)) chain.push_back(fallback);
  std::optional<json> allocator;
  std::string missing;
  for (const std::string& candidate : chain) {
    allocator = allocator_object(candidate, b.in_.allocator_search_path, b.in_.allocator_search_system);
    if (allocator) break;
    missing += (missing.empty() ? "" : ", ") + allocator_library_file(candidate);
  }
  const std::string chosen = (*allocator)["name"];  // the chain ends with glibc-tuned, always there
  if (!missing.empty()) source += "; " + missing + " not found, so " + chosen;

  json& settings = (*allocator)["settings"];
  auto tunable = [&](const char* key, const char* setting_key, bool number) {
    if (auto s = b.setting(setting_key)) {
      settings[key] = number ? json(std::stoll(s->value)) : json(s->value);
      source += "; " + std::string(setting_key) + " from settings file " + s->origin;
    }
  };
  if (chosen == "glibc-tuned") {
    tunable("mmap_threshold", "malloc_mmap_threshold", true);
    tunable("trim_threshold", "malloc_trim_threshold", true);
    tunable("top_pad", "malloc_top_pad", true);
  } else if (chosen == "jemalloc") {
    tunable("conf", "jemalloc_conf", false);
  }
  b.set("allocator", *allocator, source);
}

std::string show(const json& v) {
  if (v.is_null()) return "-";
  if (v.is_boolean()) return v.get<bool>() ? "on" : "off";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

// 1234567 -> "1,234,567"
std::string with_thousands(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (n < 0 ? "-" : "") + out;
}

// The model line: the algorithm's description of the model this config and plan give.
std::string model_text(const json& model) {
  std::string text = model.value("shape", std::string());
  if (model.contains("parameters") && model["parameters"].is_number_integer())
    text += (text.empty() ? "" : ", ") + with_thousands(model["parameters"].get<int64_t>()) + " parameters";
  return text.empty() ? "-" : text;
}

}  // namespace

bool torch_version_at_least(const std::string& version, int major, int minor) {
  int got_major = 0, got_minor = 0;
  if (std::sscanf(version.c_str(), "%d.%d", &got_major, &got_minor) != 2) return true;
  return got_major > major || (got_major == major && got_minor >= minor);
}

json make_plan(const PlanInputs& in) {
  PlanBuilder b(in);
  const Device& d = *in.device;
  b.plan_["device"] = d.id();
  b.plan_["device_name"] = d.name;
  b.plan_["torch_device"] = d.torch_device;
  b.plan_["device_class"] = device_class_name(d.device_class);
  b.plan_["memory_total_bytes"] = d.memory_total_bytes == MLH_UNKNOWN ? json(nullptr) : json(d.memory_total_bytes);
  if (!in.settings_file_status.empty()) b.plan_["settings_file"] = in.settings_file_status;
  plan_precision(b);
  plan_rule_values(b);
  plan_threads(b);
  plan_memory_and_data(b);
  plan_backend_switches(b);
  plan_allocator(b);
  if (!in.calibration_status.empty() || in.calibration) {
    json calibration = in.calibration ? in.calibration->to_json() : json::object();
    calibration["status"] = in.calibration_status;
    b.plan_["calibration"] = calibration;
  }
  return b.finish();
}

std::string plan_to_text(const json& plan) {
  std::ostringstream o;
  const json& src = plan["sources"];
  o << "Plan for " << plan["device"].get<std::string>() << " (" << plan["device_name"].get<std::string>() << ", "
    << format_bytes(plan["memory_total_bytes"].is_null() ? -1 : plan["memory_total_bytes"].get<int64_t>())
    << "), torch device '" << plan["torch_device"].get<std::string>() << "'\n";
  const json no_effect = plan.value("no_effect", json::object());
  // A value that does nothing on this run says so beside it (docs/plan.md, effects).
  auto padded = [](std::string text, size_t width) {
    if (text.size() < width) text.resize(width, ' ');
    return text;
  };
  auto row = [&](const char* label, const std::string& value, const char* key) {
    std::string shown = value;
    if (no_effect.contains(key)) shown += " (no effect: " + no_effect[key].get<std::string>() + ")";
    o << "  " << padded(label, 24) << " " << padded(shown, 18) << " " << src.value(key, "") << "\n";
  };
  row("batch size", show(plan["batch_size"]), "batch_size");
  row("gradient checkpointing", show(plan["gradient_checkpointing"]), "gradient_checkpointing");
  row("precision", show(plan["precision"]), "precision");
  std::string preset = show(plan["preset"]);
  // The preset's own size claim, where the algorithm does not describe the run's model.
  if (plan.contains("parameters") && !plan.contains("model")) preset += " (" + show(plan["parameters"]) + " parameters)";
  row("model preset", preset, "preset");
  if (plan.contains("model")) row("model", model_text(plan["model"]), "model");
  row("threads", show(plan["threads"]["intra_op"]) + " intra / " + show(plan["threads"]["inter_op"]) + " inter", "threads");
  if (plan.contains("allocator")) row("allocator", show(plan["allocator"]["name"]), "allocator");
  if (plan.contains("calibration")) o << "  calibration              " << plan["calibration"].value("status", "") << "\n";
  row("memory fraction", show(plan["memory_fraction"]), "memory_fraction");
  if (plan.contains("memory_limit_bytes"))
    row("memory limit", format_bytes(plan["memory_limit_bytes"].get<int64_t>()), "memory_limit_bytes");
  row("empty cache every", show(plan["empty_cache_steps"]), "empty_cache_steps");
  row("pinned memory", show(plan["pinned_memory"]), "pinned_memory");
  row("data workers", show(plan["dataloader_workers"]), "dataloader_workers");
  row("prefetch factor", show(plan["prefetch_factor"]), "prefetch_factor");
  row("OpenMP binding", show(plan["omp_proc_bind"]), "omp_proc_bind");
  row("OpenMP wait policy", show(plan["omp_wait_policy"]), "omp_wait_policy");
  row("cuDNN benchmark", show(plan["cudnn_benchmark"]), "cudnn_benchmark");
  row("TF32 matmul", show(plan["tf32_matmul"]), "tf32_matmul");
  row("deterministic", show(plan["deterministic"]), "deterministic");
  row("channels last", show(plan["channels_last"]), "channels_last");
  if (plan.contains("distributed")) {
    const json& d = plan["distributed"];
    row("distributed", show(d["world_size"]) + " ranks, " + show(d["backend"]), "distributed");
    row("global batch size", show(d["global_batch_size"]), "distributed");
  }
  if (plan.contains("environment") && !plan["environment"].empty()) {
    o << "  environment             ";
    std::string env;
    for (const auto& [k, v] : plan["environment"].items()) env += (env.empty() ? "" : " ") + k + "=" + v.get<std::string>();
    o << env << "\n";
  }
  if (plan.contains("settings_file")) o << "  settings file            " << plan["settings_file"].get<std::string>() << "\n";
  if (plan.value("effects_declared", true) == false)
    o << "  (the algorithm does not say which plan fields it uses: shown as given)\n";
  return o.str();
}

}  // namespace mlhost
