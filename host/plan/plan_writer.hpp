// The plan under construction: its values, each with a source, and the facts beside them
// (the device, the model, what has no effect). Only the planner holds one (planner.cpp and
// the steps it calls); every later stage reads the finished JSON.
#pragma once

#include <string>

#include <mlh/plan_fields.hpp>
#include <nlohmann/json.hpp>

#include "plan/sources.hpp"

namespace mlhost {

class PlanWriter {
 public:
  // A setting of the plan (mlh/plan_fields.hpp) and where it came from.
  void set(mlh::PlanField field, nlohmann::json value, Source source);
  // Adds to a value's source text, keeping its kind ("; divided among 2 ranks").
  void extend_source(mlh::PlanField field, const std::string& more);
  // What is not a setting: the device, the model, calibration and batch search reports, the
  // environment, no_effect and warnings (docs/plan.md lists them).
  void set_fact(const std::string& key, nlohmann::json value);
  // Appends to the "warnings" fact, once: a warning already there is not added again.
  void add_warning(const std::string& warning);

  const nlohmann::json& value(mlh::PlanField field) const;  // null when not set
  const Source& source(mlh::PlanField field) const;         // kDefault, "" when not set
  bool has(mlh::PlanField field) const;

  // The plan as it stands, with "sources" and "source_kinds".
  const nlohmann::json& view() const { return plan_; }

 private:
  nlohmann::json plan_ = {{"sources", nlohmann::json::object()}, {"source_kinds", nlohmann::json::object()}};
  Source sources_[mlh::kPlanFieldCount];
  bool set_[mlh::kPlanFieldCount] = {};
};

}  // namespace mlhost
