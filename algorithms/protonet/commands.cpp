#include "commands.hpp"

#include <mlh/runtime/command_setup.hpp>
#include <nlohmann/json.hpp>

namespace protonet {

const Commands& command_table() {
  static const Commands table{
      {"train", train}, {"eval", eval}, {"classify", classify}, {"forward", forward}, {"benchmark", benchmark}, {"calibrate", calibrate}};
  return table;
}

void run_command(mlh::RunContext& ctx, const DatasetLoader& load, const ImageDecoder& decode,
                 const ClassLister& list_classes) {
  const Commands::Body& command = command_table().find(ctx.command());
  const Config cfg = parse_config(nlohmann::json::parse(ctx.config_json()));
  // Distributed ranks draw different training episodes; their models start from rank 0's.
  const mlh::rt::RuntimePlan plan = mlh::rt::prepare_command(ctx, cfg.seed);
  command(ctx, cfg, plan, DataSources{load, decode, list_classes});
}

}  // namespace protonet
