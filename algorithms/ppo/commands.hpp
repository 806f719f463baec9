// PPO's commands, run by the plugin (ppo_plugin.cpp) and by the tests:
//   train      PPO on CartPole-v1 or puzzles: generated (curriculum), the user's levels
//              (puzzle.train_levels), or a mix; every level file the run will read is checked
//              before it trains; metrics per iteration
//              (episodic return, avg of the last 100, losses, KL, clip fraction, explained
//              variance, env steps/s; puzzles: solve rate and curriculum level; the levels'
//              own solve rate, and at the end the policy on them), checkpoints
//              every checkpoint_every iterations, at the end and on cancel (best by the
//              average return of the last 100 episodes), resume, model.safetensors and
//              network.json (the network spec eval/play rebuild from) in the run folder
//   eval       CartPole: mean return over eval_episodes; puzzles: solve rate, mean steps and
//              mean steps / optimal on held-out puzzles, next to a random policy's
//   play       the policy solving a level-file puzzle: each move and board printed
//   forward    the trained network's logits and values on given observations (forward.inputs),
//              written to outputs.safetensors for comparison with the same network elsewhere
//   export     the checkpoint `checkpoint` names (best by default; training's model.safetensors
//              holds its last weights) as model.safetensors in the command folder, which
//              mlhost.load_run() reads
//   benchmark  env steps/s of collection and of whole training iterations (CartPole, and
//              puzzles with the recursive net), 1 vs the plan's threads; forward passes/s of
//              each network at batch 1 and 64
//   calibrate  whole training iterations' speed on the config's task with the plan's
//              settings, for the host's calibration (mlh/runtime/calibration.hpp)
//
// The plan's batch_size is not used: PPO's batch is num_envs x num_steps. The plan's preset
// sizes the residual tower; its precision runs the recursive/resnet forward passes under
// autocast (the CartPole MLP stays fp32); its threads are applied. describe_run says so for
// each field (docs/plan.md).
//
// The files: train.cpp (train), eval.cpp (eval, play), forward.cpp (forward), benchmark.cpp (benchmark, calibrate),
// describe_run.cpp, trained_model.cpp (network.json, a trained run's network, export), and this
// file's commands.cpp (the table and the dispatch).
#pragma once

#include <string>

#include <mlh/command_table.hpp>
#include <mlh/plugin.hpp>

#include "config.hpp"

namespace mlh::rt {
struct RuntimePlan;
}

namespace ppo {

using Commands = mlh::CommandTable<mlh::RunContext&, const Config&, const mlh::rt::RuntimePlan&>;

void train(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan);
void eval(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan);
void play(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan);
void forward(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan);
void export_weights(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan);
void benchmark(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan);
void calibrate(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan);

// The commands in the order the plugin lists them (the first, train, is the default).
const Commands& command_table();

// Runs ctx.command() with the plan applied and the rank's seed.
void run_command(mlh::RunContext& ctx);

// describe_run (ABI 1.1): the network a run of ctx's command, config and plan uses, and what
// it does with each plan field, without running it.
std::string describe_run(const mlh::RunContext& ctx);

}  // namespace ppo
