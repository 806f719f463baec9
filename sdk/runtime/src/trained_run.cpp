#include "mlh/runtime/trained_run.hpp"

#include <nlohmann/json.hpp>

#include <mlh/plugin.hpp>

namespace mlh::rt {

std::string trained_run_dir(const mlh::RunContext& ctx) {
  const nlohmann::json plan = nlohmann::json::parse(ctx.plan_json(), nullptr, /*allow_exceptions=*/false);
  if (plan.is_object()) {
    const auto it = plan.find("trained_run_dir");
    if (it != plan.end() && it->is_string() && !it->get<std::string>().empty()) return it->get<std::string>();
  }
  return ctx.run_dir();
}

LoadedCheckpoint load_trained(const mlh::RunContext& ctx, TrainingState& state, at::Device device,
                              const std::string& which, Goal goal) {
  if (which != "best" && which != "latest")
    throw Error(MLH_ERR_INVALID_ARGUMENT, "config field 'checkpoint': expected best or latest, got '" + which + "'");
  // Loading prunes nothing: how many a run keeps matters only to saving.
  CheckpointManager checkpoints(trained_run_dir(ctx), /*keep_last=*/1, goal, [&](const std::string& w) { ctx.warn(w); });
  std::optional<LoadedCheckpoint> loaded =
      which == "best" ? checkpoints.load_best(state, device) : checkpoints.load_latest(state, device);
  if (!loaded && which == "best") loaded = checkpoints.load_latest(state, device);
  if (!loaded) throw Error(MLH_ERR_IO, "no trained model in the run folder ('" + checkpoints.dir() + "'): train first");
  return *loaded;
}

}  // namespace mlh::rt
