#include "mlh/runtime/command_setup.hpp"

#include <algorithm>

#include <mlh/plugin.hpp>
#include <nlohmann/json.hpp>

#include "mlh/runtime/distributed.hpp"
#include "mlh/runtime/seed.hpp"

namespace mlh::rt {

RuntimePlan prepare_command(const mlh::RunContext& ctx, uint64_t seed) {
  RuntimePlan plan = RuntimePlan::parse(ctx.plan_json());
  apply_plan(plan);
  seed_everything(seed_for_rank(seed, ctx.rank()));
  return plan;
}

bool set_by_user(const mlh::RunContext& ctx, const std::string& field) {
  const nlohmann::json plan = nlohmann::json::parse(ctx.plan_json(), nullptr, /*allow_exceptions=*/false);
  if (!plan.is_object()) return false;
  const nlohmann::json names = plan.value("config_set_by_user", nlohmann::json::array());
  return names.is_array() && std::find(names.begin(), names.end(), nlohmann::json(field)) != names.end();
}

}  // namespace mlh::rt
