#include "plan/plan_text.hpp"

#include <cstdint>
#include <sstream>

#include "probe/ranking.hpp"

namespace mlhost {

using nlohmann::json;

namespace {

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
  if (plan.contains("max_steps") && !plan["max_steps"].is_null()) row("max steps", show(plan["max_steps"]), "max_steps");
  if (plan.contains("init_from") && plan["init_from"].is_object()) {
    std::string shown = plan["init_from"].value("path", "");
    const json freeze = plan["init_from"].value("freeze", json::array());
    if (!freeze.empty()) shown += " (frozen: " + freeze.dump() + ")";
    row("initial weights", shown, "init_from");
  }
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
