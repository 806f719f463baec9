#include "mlh/runtime/command_setup.hpp"

#include <mlh/plugin.hpp>

#include "mlh/runtime/distributed.hpp"
#include "mlh/runtime/seed.hpp"

namespace mlh::rt {

RuntimePlan prepare_command(const mlh::RunContext& ctx, uint64_t seed) {
  RuntimePlan plan = RuntimePlan::parse(ctx.plan_json());
  apply_plan(plan);
  seed_everything(seed_for_rank(seed, ctx.rank()));
  return plan;
}

}  // namespace mlh::rt
