// What each plan value does on this run (docs/plan.md, "What each field does"). A value is
// printed as applied only when something applies it here: the worker's side decides some
// fields (pinned memory speeds up copies to a CUDA GPU only, cuDNN runs on CUDA only), the
// algorithm the rest (what its describe_run says it does with each field it reads); the
// table in mlh/plan_fields.hpp says which. A value with no effect is marked in
// plan["no_effect"] with the reason; one the user set explicitly (command line, settings
// file, config) is also a warning; --batch-size for an algorithm whose batch is not a batch
// size is an error. A step of plan_run().
#pragma once

#include <optional>
#include <string>

#include <mlh/plan_fields.hpp>
#include <nlohmann/json.hpp>

#include "plan/plan_writer.hpp"
#include "probe/device.hpp"

namespace mlhost {

struct EffectInputs {
  const Device* device = nullptr;
  std::string algorithm;                            // "" when the plan is for no algorithm
  std::optional<std::string> algorithm_torch;       // the LibTorch version the algorithm was built with
  const nlohmann::json* run_description = nullptr;  // its describe_run answer; null: it does not say
};

// Why `field` with its value in `plan` does nothing on this device whatever the algorithm, or
// nothing when it can act here (or its value asks for nothing, like false or 0).
std::optional<std::string> device_no_effect(mlh::PlanField field, const nlohmann::json& plan, const EffectInputs& in);

// Writes plan["no_effect"] (field -> why), plan["warnings"] and, from the run description,
// plan["model"]. Throws PlanError for a command-line value that cannot work.
void mark_plan_effects(PlanWriter& plan, const EffectInputs& in);

}  // namespace mlhost
