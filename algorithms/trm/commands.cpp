#include "commands.hpp"

#include <mlh/runtime/command_setup.hpp>
#include <nlohmann/json.hpp>

namespace trm {
namespace {

// A LibTorch command, run with the plan applied and the generators seeded (build-data needs
// neither).
Commands::Body with_plan(void (*body)(mlh::RunContext&, const Config&, const mlh::rt::RuntimePlan&)) {
  return [body](mlh::RunContext& ctx, const Config& cfg) { body(ctx, cfg, mlh::rt::prepare_command(ctx, cfg.seed)); };
}

}  // namespace

const Commands& command_table() {
  static const Commands table{{"train", with_plan(train_command)},
                              {"build-data", build_data_command},
                              {"eval", with_plan(eval_command)},
                              {"solve", with_plan(solve_command)},
                              {"generate", with_plan(generate_command)},
                              {"forward", with_plan(forward_command)},
                              {"export", with_plan(export_command)},
                              {"benchmark", with_plan(benchmark_command)},
                              {"calibrate", with_plan(calibrate_command)}};
  return table;
}

void run_command(mlh::RunContext& ctx) {
  const Commands::Body& command = command_table().find(ctx.command());
  command(ctx, parse_config(nlohmann::json::parse(ctx.config_json())));
}

}  // namespace trm
