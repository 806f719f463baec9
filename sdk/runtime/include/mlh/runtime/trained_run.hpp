// Where a command that uses a trained model (eval, classify, play, sample, ...) finds it.
//
// The host runs such a command on a trained run (`--run-dir R --resume --command eval`) in a
// folder of its own inside the run (R/commands/eval-1: its config, plan, summary, metrics and
// log), so that the training run's files stay as training left them; the plan then names the
// trained run ("trained_run_dir"). Read the model, its checkpoints and its side files from
// trained_run_dir(ctx), and write only into ctx.run_dir().
#pragma once

#include <string>

namespace mlh {
class RunContext;
}

namespace mlh::rt {

// The plan's trained_run_dir when the host gave one, else this run's own folder.
std::string trained_run_dir(const mlh::RunContext& ctx);

}  // namespace mlh::rt
