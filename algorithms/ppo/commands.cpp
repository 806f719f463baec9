#include "commands.hpp"

#include <mlh/runtime/command_setup.hpp>
#include <nlohmann/json.hpp>

namespace ppo {

const Commands& command_table() {
  static const Commands table{
      {"train", train}, {"eval", eval}, {"play", play}, {"forward", forward}, {"export", export_weights}, {"benchmark", benchmark}, {"calibrate", calibrate}};
  return table;
}

void run_command(mlh::RunContext& ctx) {
  const Commands::Body& command = command_table().find(ctx.command());
  const Config cfg = parse_config(nlohmann::json::parse(ctx.config_json()));
  command(ctx, cfg, mlh::rt::prepare_command(ctx, cfg.seed));
}

}  // namespace ppo
