#include "mlh/runtime/trained_run.hpp"

#include <filesystem>

#include <nlohmann/json.hpp>

#include <mlh/plugin.hpp>
#include <torch/nn/module.h>

#include "mlh/runtime/safetensors.hpp"

namespace mlh::rt {

namespace {

// Training saved a checkpoint there: what every command on a trained run reads.
bool holds_checkpoints(const std::string& run_dir) {
  std::error_code ec;
  const std::filesystem::path dir = std::filesystem::path(run_dir) / "checkpoints";
  return std::filesystem::is_directory(dir, ec) && !std::filesystem::is_empty(dir, ec);
}

}  // namespace

std::string trained_run_dir(const mlh::RunContext& ctx) {
  const nlohmann::json plan = nlohmann::json::parse(ctx.plan_json(), nullptr, /*allow_exceptions=*/false);
  std::string named;
  if (plan.is_object()) {
    const auto it = plan.find("trained_run_dir");
    if (it != plan.end() && it->is_string()) named = it->get<std::string>();
  }
  const std::string run = named.empty() ? ctx.run_dir() : named;
  if (holds_checkpoints(run)) return run;
  // Invalid input, not a failure: the user fixes it on the command line (exit 2, and the host
  // removes the folder it made for the command).
  if (named.empty())
    throw Error(MLH_ERR_INVALID_ARGUMENT,
                "no trained model in the run folder ('" + run + "'): '" + ctx.command() +
                    "' works on a trained run; name it with --run-dir and add --resume (--run-dir runs/NAME --resume "
                    "--command " + ctx.command() + "), or train first");
  throw Error(MLH_ERR_INVALID_ARGUMENT, "no trained model in the run folder ('" + run +
                                            "'): it holds no checkpoints; train it first (the same command without "
                                            "--command), or name a run that trained with --run-dir");
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

std::string export_trained(const mlh::RunContext& ctx, const torch::nn::Module& model,
                           std::map<std::string, std::string> metadata, const LoadedCheckpoint& from) {
  const std::string path = ctx.run_dir() + "/model.safetensors";
  export_module_weights(model, path, std::move(metadata));
  ctx.info("exported " + from.path + " (step " + std::to_string(from.step) + ") to " + path +
           ": mlhost.load_run('" + ctx.run_dir() + "') reads it");
  ctx.summary(nlohmann::json{{"weights", path}, {"checkpoint", from.path}, {"step", from.step}}.dump());
  return path;
}

}  // namespace mlh::rt
