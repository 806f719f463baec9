// TRM's commands, run by the plugin (trm_plugin.cpp) and by the tests:
//   build-data  writes a generated Sudoku or maze dataset in the reference's format
//               (build.*) to build.out_dir or data.dir
//   train       ACT deep supervision on a puzzle dataset (data.dir, or one generated into the
//               run folder) or on a text file; metrics per step (loss, token and exact
//               accuracy of the rows that halted, mean halting steps, LR, samples/s), evals
//               every eval_every steps with the EMA weights, checkpoints, resume,
//               model.json and model.safetensors in the run folder
//   eval        puzzles: exact accuracy (whole answer right), token accuracy and mean halting
//               steps on the test split; text: held-out loss, bits per byte, accuracy
//   solve       prints a test puzzle (solve.index) or a given Sudoku (solve.puzzle) and the
//               model's answer
//   generate    text: continues generate.prompt (temperature, top-k, top-p, max_tokens)
//   forward     the last ACT step's logits and halting logits on given token ids
//               (forward.inputs), as eval runs the model, written to outputs.safetensors
//   export      the checkpoint `checkpoint` names (best by default; training's model.safetensors
//               holds its last weights) as model.safetensors in the command folder, which
//               mlhost.load_run() reads
//   benchmark   training samples/s and model FLOPs utilization
//   calibrate   one training step's speed with the plan's settings, and the bf16 quality
//               check, for the host's calibration (mlh/runtime/calibration.hpp)
// eval, solve, generate, forward and export load the run folder's model on whatever device the
// plan chose.
#pragma once

#include <string>

#include <mlh/command_table.hpp>
#include <mlh/plugin.hpp>

#include "config.hpp"

namespace mlh::rt {
struct RuntimePlan;
}

namespace trm {

using Commands = mlh::CommandTable<mlh::RunContext&, const Config&>;

// The commands in the order the plugin lists them (the first, train, is the default).
const Commands& command_table();

// Runs ctx.command() on the parsed config.
void run_command(mlh::RunContext& ctx);

// describe_run (ABI 1.1): the model a run of ctx's command, config and plan builds and what it
// does with each plan field, without running it (describe_run.cpp).
std::string describe_run(const mlh::RunContext& ctx);

// The commands' bodies: build-data and train in train.cpp, eval, solve and generate in eval.cpp
// (solve_arc in arc_solve.cpp), forward in forward.cpp, export in trained_model.cpp, benchmark and
// calibrate in benchmark.cpp.
void build_data_command(mlh::RunContext& ctx, const Config& cfg);
void train_command(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan);
void eval_command(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan);
void solve_command(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan);
// solve with solve.arc_challenges: every task of an ARC challenges file, voted over its versions.
void solve_arc_command(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan);
void generate_command(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan);
void forward_command(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan);
void export_command(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan);
void benchmark_command(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan);
void calibrate_command(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan);

}  // namespace trm
