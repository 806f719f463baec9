// What each plan value does on this run (docs/plan.md, "What each field does"). A value is
// printed as applied only when something applies it here: the device decides some fields
// (pinned memory speeds up copies to a CUDA GPU only, cuDNN runs on CUDA only), the algorithm
// the rest (what its describe_run says it does with each field it reads). A value with no
// effect is marked in plan["no_effect"] with the reason; one the user set explicitly (command
// line, settings file, config) is also a warning; --batch-size for an algorithm whose batch
// is not a batch size is an error.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "probe/device.hpp"

namespace mlhost {

// One setting of the plan: a field with a source in plan["sources"].
struct PlanSettingField {
  std::string name;
  // Whether the algorithm decides its effect (it says so in describe_run's plan_fields);
  // otherwise the device and the worker's environment do, whatever the algorithm.
  bool algorithm_decides;
};

// Every setting make_plan() and plan_for_launch() can write, in the order docs/plan.md's
// table lists them. A field missing here fails the tests (tests/host/plan_effects_test.cpp).
const std::vector<PlanSettingField>& plan_setting_fields();

struct EffectInputs {
  const Device* device = nullptr;
  std::string algorithm;                         // "" when the plan is for no algorithm
  std::optional<std::string> algorithm_torch;    // the LibTorch version the algorithm was built with
  const nlohmann::json* run_description = nullptr;  // its describe_run answer; null: it does not say
};

// Why `field` with its value in `plan` does nothing on this device whatever the algorithm, or
// nothing when it can act here (or its value asks for nothing, like false or 0).
std::optional<std::string> device_no_effect(const std::string& field, const nlohmann::json& plan, const EffectInputs& in);

// Fills plan["no_effect"] (field -> why), plan["warnings"] and, from the run description,
// plan["model"]. Throws PlanError (plan.hpp) for a command-line value that cannot work.
void mark_plan_effects(nlohmann::json& plan, const EffectInputs& in);

}  // namespace mlhost
