#include "commands.hpp"

#include <mlh/runtime/apply_plan.hpp>
#include <mlh/runtime/distributed.hpp>
#include <mlh/runtime/seed.hpp>
#include <nlohmann/json.hpp>

namespace protonet {

const Commands& command_table() {
  static const Commands table{
      {"train", train}, {"eval", eval}, {"classify", classify}, {"benchmark", benchmark}, {"calibrate", calibrate}};
  return table;
}

void run_command(mlh::RunContext& ctx, const DatasetLoader& load, const ImageDecoder& decode,
                 const ClassLister& list_classes) {
  const Commands::Body& command = command_table().find(ctx.command());
  const Config cfg = parse_config(nlohmann::json::parse(ctx.config_json()));
  const mlh::rt::RuntimePlan plan = mlh::rt::RuntimePlan::parse(ctx.plan_json());
  mlh::rt::apply_plan(plan);
  // Distributed ranks draw different training episodes; their models start from rank 0's.
  mlh::rt::seed_everything(mlh::rt::seed_for_rank(cfg.seed, ctx.rank()));
  command(ctx, cfg, plan, DataSources{load, decode, list_classes});
}

}  // namespace protonet
