// What every command of an algorithm does before its body, in one place:
//
//   void run(mlh::RunContext& ctx) {
//     const Config cfg = parse_config(nlohmann::json::parse(ctx.config_json()));
//     const mlh::rt::RuntimePlan plan = mlh::rt::prepare_command(ctx, cfg.seed);
//     commands().run(ctx.command(), ctx, cfg, plan);
//   }
#pragma once

#include <cstdint>
#include <string>

#include "mlh/runtime/apply_plan.hpp"

namespace mlh {
class RunContext;
}

namespace mlh::rt {

// Reads the run's plan, applies it (threads, memory cap, backend switches: apply_plan) and
// seeds every generator for this rank: rank 0 draws from `seed`, every other rank from a
// stream of its own (seed_for_rank), as ranks of a data-parallel run should; their models
// start from rank 0's weights, which the distributed wrapper broadcasts.
RuntimePlan prepare_command(const mlh::RunContext& ctx, uint64_t seed);

// Whether the user set config field `field` (dotted: "test_way", "model.encoder") with --set
// or a --config file (the plan's config_set_by_user). A value the user chose is never changed
// to fit the data, which is an error naming the field instead; a default may be, with a
// warning naming the field.
bool set_by_user(const mlh::RunContext& ctx, const std::string& field);

}  // namespace mlh::rt
