#include "plan/plan_writer.hpp"

namespace mlhost {

using nlohmann::json;

const char* source_kind_name(SourceKind kind) {
  switch (kind) {
    case SourceKind::kCommandLine: return "command_line";
    case SourceKind::kConfig: return "config";
    case SourceKind::kTrainedRun: return "trained_run";
    case SourceKind::kPreset: return "preset";
    case SourceKind::kSettingsFile: return "settings_file";
    case SourceKind::kCalibration: return "calibration";
    case SourceKind::kBatchFinder: return "batch_finder";
    case SourceKind::kRule: return "rule";
    case SourceKind::kDevice: return "device";
    case SourceKind::kAlgorithm: return "algorithm";
    case SourceKind::kLaunch: return "launch";
    case SourceKind::kDefault: return "default";
  }
  return "default";
}

bool chosen_by_user(SourceKind kind) {
  return kind == SourceKind::kCommandLine || kind == SourceKind::kSettingsFile || kind == SourceKind::kConfig;
}

void PlanWriter::set(mlh::PlanField field, json value, Source source) {
  const size_t i = static_cast<size_t>(field);
  const char* name = mlh::plan_field_name(field);
  plan_[name] = std::move(value);
  plan_["sources"][name] = source.text;
  plan_["source_kinds"][name] = source_kind_name(source.kind);
  sources_[i] = std::move(source);
  set_[i] = true;
}

void PlanWriter::extend_source(mlh::PlanField field, const std::string& more) {
  Source& s = sources_[static_cast<size_t>(field)];
  s.text += more;
  plan_["sources"][mlh::plan_field_name(field)] = s.text;
}

void PlanWriter::set_fact(const std::string& key, json value) { plan_[key] = std::move(value); }

void PlanWriter::add_warning(const std::string& warning) {
  json& warnings = plan_["warnings"];
  if (!warnings.is_array()) warnings = json::array();
  for (const json& w : warnings)
    if (w == warning) return;
  warnings.push_back(warning);
}

const json& PlanWriter::value(mlh::PlanField field) const {
  static const json null;
  const auto it = plan_.find(mlh::plan_field_name(field));
  return it == plan_.end() ? null : *it;
}

const Source& PlanWriter::source(mlh::PlanField field) const { return sources_[static_cast<size_t>(field)]; }

bool PlanWriter::has(mlh::PlanField field) const { return set_[static_cast<size_t>(field)]; }

}  // namespace mlhost
