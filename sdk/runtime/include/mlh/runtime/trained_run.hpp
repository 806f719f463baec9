// Where a command that uses a trained model (eval, classify, play, solve, sample, ...) finds
// it, and loading it.
//
// The host runs such a command on a trained run (`--run-dir R --resume --command eval`) in a
// folder of its own inside the run (R/commands/eval-1: its config, plan, summary, metrics and
// log), so that the training run's files stay as training left them; the plan then names the
// trained run ("trained_run_dir"). Read the model, its checkpoints and its side files from
// trained_run_dir(ctx), and write only into ctx.run_dir().
#pragma once

#include <string>

#include <c10/core/Device.h>

#include "mlh/runtime/checkpoint.hpp"

namespace mlh {
class RunContext;
}

namespace mlh::rt {

// The plan's trained_run_dir when the host gave one, else this run's own folder.
std::string trained_run_dir(const mlh::RunContext& ctx);

// Loads the trained run's checkpoint into `state` on `device`: with `which` "best" its best
// by `goal` (or its newest, when the run kept no best: a run without validation), with
// "latest" its newest. Damaged checkpoints are skipped with a warning through ctx. A run with
// none that loads is an mlh::Error(MLH_ERR_IO): "no trained model in the run folder
// ('<run>/checkpoints'): train first".
LoadedCheckpoint load_trained(const mlh::RunContext& ctx, TrainingState& state, at::Device device,
                              const std::string& which = "best", Goal goal = Goal::Minimize);

}  // namespace mlh::rt
