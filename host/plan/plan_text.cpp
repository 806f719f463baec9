#include "plan/plan_text.hpp"

#include <cstdint>
#include <sstream>

#include <mlh/plan_fields.hpp>

#include "plan/duration.hpp"
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

// The model line: the algorithm's description of the model this config and plan give.
std::string model_text(const json& model) {
  std::string text = model.value("shape", std::string());
  if (model.contains("parameters") && model["parameters"].is_number_integer())
    text += (text.empty() ? "" : ", ") + with_thousands(model["parameters"].get<int64_t>()) + " parameters";
  return text.empty() ? "-" : text;
}

}  // namespace

std::string with_thousands(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (n < 0 ? "-" : "") + out;
}

std::string plan_to_text(const json& plan) {
  std::ostringstream o;
  const json& src = plan["sources"];
  o << "Plan for " << plan["device"].get<std::string>() << " (" << plan["device_name"].get<std::string>() << ", "
    << format_bytes(plan["memory_total_bytes"].is_null() ? -1 : plan["memory_total_bytes"].get<int64_t>())
    << "), torch device '" << plan["torch_device"].get<std::string>() << "'\n";
  if (plan.contains("device_choice")) o << "  device choice            " << plan["device_choice"].value("status", "") << "\n";
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
  static const json null;
  auto field = [&](const char* name) -> const json& { return plan.contains(name) ? plan[name] : null; };
  // A line per setting, labelled and ordered by the plan's table; the facts that explain a
  // setting (the model a preset gives, what calibration measured) follow it.
  for (const mlh::PlanFieldInfo& f : mlh::kPlanFields) {
    if (!f.label) continue;
    const json& value = field(f.name);
    switch (f.field) {
      case mlh::PlanField::kPreset: {
        std::string preset = show(value);
        // The preset's own size claim, where the algorithm does not describe the run's model.
        if (plan.contains("parameters") && !plan.contains("model")) preset += " (" + show(plan["parameters"]) + " parameters)";
        row(f.label, preset, f.name);
        if (plan.contains("model")) row("model", model_text(plan["model"]), "model");
        break;
      }
      case mlh::PlanField::kThreads:
        row(f.label, show(value["intra_op"]) + " intra / " + show(value["inter_op"]) + " inter", f.name);
        break;
      case mlh::PlanField::kAllocator:
        if (value.is_object()) row(f.label, show(value["name"]), f.name);
        if (plan.contains("calibration")) o << "  calibration              " << plan["calibration"].value("status", "") << "\n";
        if (plan.contains("expected_duration"))
          o << "  expected duration        " << expected_duration_text(plan["expected_duration"]) << "\n";
        break;
      case mlh::PlanField::kMemoryLimitBytes:
        if (value.is_number_integer()) row(f.label, format_bytes(value.get<int64_t>()), f.name);
        break;
      case mlh::PlanField::kMaxSteps:
        if (!value.is_null()) row(f.label, show(value), f.name);
        break;
      case mlh::PlanField::kInitFrom:
        if (value.is_object()) {
          std::string shown = value.value("path", "");
          const json freeze = value.value("freeze", json::array());
          if (!freeze.empty()) shown += " (frozen: " + freeze.dump() + ")";
          row(f.label, shown, f.name);
        }
        break;
      case mlh::PlanField::kDistributed:
        if (value.is_object()) {
          row(f.label, show(value["world_size"]) + " ranks, " + show(value["backend"]), f.name);
          row("global batch size", show(value["global_batch_size"]), f.name);
        }
        break;
      default:
        row(f.label, show(value), f.name);
    }
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
