// Where a command that uses a trained model (eval, classify, play, solve, sample, export, ...)
// finds it, loading it, and exporting it.
//
// The host runs such a command on a trained run (`--run-dir R --resume --command eval`) in a
// folder of its own inside the run (R/commands/eval-1: its config, plan, summary, metrics and
// log), so that the training run's files stay as training left them; the plan then names the
// trained run ("trained_run_dir"). Read the model, its checkpoints and its side files from
// trained_run_dir(ctx), and write only into ctx.run_dir().
#pragma once

#include <map>
#include <string>

#include <c10/core/Device.h>

#include "mlh/runtime/checkpoint.hpp"

namespace torch::nn {
class Module;
}

namespace mlh {
class RunContext;
}

namespace mlh::rt {

// The plan's trained_run_dir when the host gave one, else this run's own folder. A folder
// without checkpoints (a command run without --resume, or on a run that never trained) is an
// mlh::Error(MLH_ERR_INVALID_ARGUMENT) that says what to type: the host exits 2 and removes the
// folder it made for the command.
std::string trained_run_dir(const mlh::RunContext& ctx);

// Loads the trained run's checkpoint into `state` on `device`: with `which` "best" its best
// by `goal` (or its newest, when the run kept no best: a run without validation), with
// "latest" its newest. Damaged checkpoints are skipped with a warning through ctx; a run whose
// checkpoints all fail to load is an mlh::Error(MLH_ERR_IO) (one without any: trained_run_dir).
LoadedCheckpoint load_trained(const mlh::RunContext& ctx, TrainingState& state, at::Device device,
                              const std::string& which = "best", Goal goal = Goal::Minimize);

// The export command's work once the algorithm has loaded a trained run's checkpoint into
// `model`: its weights to model.safetensors in the command's own folder, with the `metadata`
// training writes beside them (so mlhost.load_run(<that folder>) rebuilds the network), a log
// line, and a summary naming the checkpoint. Training's own model.safetensors holds the weights
// it ended with; this one the checkpoint the user chose (best by default). Returns the path.
std::string export_trained(const mlh::RunContext& ctx, const torch::nn::Module& model,
                           std::map<std::string, std::string> metadata, const LoadedCheckpoint& from);

}  // namespace mlh::rt
