// The lifecycle every `train` command shares, in one object, so that an algorithm's `train`
// is its loop and little else. A TrainingSession
//   - joins the ranks' group (mlh::rt::Distributed; nothing to join for one process),
//   - keeps the run's checkpoints (CheckpointManager: rank 0 writes, every rank loads),
//   - under --resume loads the newest checkpoint into the loop's state and says so in the log,
//   - after each step records memory statistics and releases the device cache every
//     plan.empty_cache_steps steps (MemoryMonitor), saves every `checkpoint_every` steps, and
//     when the host asks the run to stop, stops every rank at the same step after a checkpoint
//     and throws mlh::Error(MLH_ERR_CANCELLED, "stopped at step 12 (checkpoint saved)"),
//   - exports the weights (rank 0, <run_dir>/model.safetensors) and sends the summary with the
//     fields every run reports (world_size, ranks_agree).
//
//   mlh::rt::TrainingSession session(ctx, plan, {/*keep_checkpoints=*/3, mlh::rt::Goal::Minimize,
//                                                /*checkpoint_every=*/100});
//   Net net;
//   session.init_weights(*net);                            // --init-from: weights from a file
//   session.dist().broadcast_module(*net);                 // rank 0's initial weights everywhere
//   auto state = [&] {                                     // what a checkpoint holds
//     mlh::rt::TrainingState s;
//     s.add("model", *net).add("optimizer", optimizer);
//     s.values = {{"step", step}};
//     return s;
//   };
//   mlh::rt::TrainingState saved = state();
//   session.resume(saved, [&](const mlh::rt::LoadedCheckpoint& c) {
//     step = c.values.at("step");
//     return "at step " + std::to_string(step);            // log: "resumed at step 200 (<file>)"
//   });
//   const int64_t steps = session.step_limit(config_steps);  // --max-steps may end it sooner
//   while (step < steps) {
//     ... forward, backward, session.dist().average_gradients(net->parameters()), optimizer.step() ...
//     ++step;
//     session.after_step(step, [&] { session.save(state(), step, loss); }, /*save_now=*/step == steps);
//   }
//   session.export_weights(*net);
//   session.finish(*net, {{"final_loss", loss}});
//
// Every rank must make the same calls in the same order: after_step, stop_if_asked, save and
// finish are collective in a distributed run.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include <mlh/plugin.hpp>  // RunContext
#include <nlohmann/json.hpp>

#include "mlh/runtime/apply_plan.hpp"
#include "mlh/runtime/checkpoint.hpp"  // TrainingState, CheckpointManager; torch::nn::Module declared
#include "mlh/runtime/distributed.hpp"
#include "mlh/runtime/memory.hpp"
#include "mlh/runtime/warm_start.hpp"

namespace mlh::rt {

struct SessionOptions {
  int keep_checkpoints = 3;        // step files kept besides best.ckpt (at least 1)
  Goal goal = Goal::Minimize;      // which checkpoint metric is better, for best.ckpt
  int64_t checkpoint_every = 0;    // after_step saves every N steps; 0: only when told to
  std::string step_name = "step";  // what the loop counts, for the stop message ("iteration", "episode")
  // The memory monitor's settings (interval, low-memory warning; tests inject its clock and
  // cache release). Its empty_cache_steps is always the plan's.
  MemoryMonitorOptions memory = {};
};

// Writes this moment's checkpoint, through TrainingSession::save; the session calls it when
// one is due. A callback, because only the loop knows what its state and counters are.
using SaveFn = std::function<void()>;

// Applies a loaded checkpoint's values to the loop (counters, scaler, sampler, random
// streams) and says where the run continues, for the log: "at step 200".
using RestoreFn = std::function<std::string(const LoadedCheckpoint&)>;

class TrainingSession {
 public:
  // Joins the group when the run has several ranks (an mlh::Error naming the rendezvous
  // address when it fails) and opens <run_dir>/checkpoints. `ctx` must outlive the session.
  TrainingSession(const mlh::RunContext& ctx, const RuntimePlan& plan, SessionOptions options = {});
  TrainingSession(const TrainingSession&) = delete;
  TrainingSession& operator=(const TrainingSession&) = delete;

  Distributed& dist() { return dist_; }
  CheckpointManager& checkpoints() { return checkpoints_; }

  // Under --init-from (the plan's init_from), copies the file's weights into `model` and
  // freezes the parameters --freeze names, then logs what it loaded ("--init-from <file>
  // (<format>): 24 tensors ..."); without it, nothing. Call it on every rank once the model is
  // built, before its optimizer and any copy of its weights (an EMA): --resume's checkpoint,
  // loaded later, replaces the weights again (freezing stays). A file that does not fit the
  // model throws mlh::Error naming the tensor (warm_start.hpp).
  // `rename` maps another implementation's names to the model's (WeightNameMap).
  void init_weights(torch::nn::Module& model, const WeightNameMap& rename = {});

  // The same check without a session, for an algorithm whose data loads before its model is
  // built: loads the --init-from file into `scratch` (a model built from the config alone,
  // thrown away after), so a file that does not fit fails before a long data load, with the
  // error init_weights would give. Nothing without --init-from. The caller keeps the random
  // generators' state around building `scratch` (capture_rng_state) where that matters.
  static void check_init_weights(const RuntimePlan& plan, torch::nn::Module& scratch,
                                 const WeightNameMap& rename = {});

  // Under --resume, loads the newest checkpoint that verifies into `state` (modules and
  // optimizers in place, tensors and values replaced), calls `restore` and logs
  // "resumed <where> (<file>)"; without `restore` (or when it returns ""), "resumed at step
  // <the checkpoint's step> (<file>)". Without --resume, or with no checkpoint to load (the
  // log says so), nothing changes: nullopt. A checkpoint that does not fit the state throws
  // (load_training_state), as does `restore`.
  std::optional<LoadedCheckpoint> resume(TrainingState& state, const RestoreFn& restore = nullptr);

  // A checkpoint now, filed under `step`; `metric` ranks it for best.ckpt. Returns its path.
  std::string save(const TrainingState& state, int64_t step, std::optional<double> metric = std::nullopt);

  // The number of steps to train: `planned` (the config's), or fewer under --max-steps (the
  // plan's max_steps). A loop sized by it ends at --max-steps as at its normal end.
  int64_t step_limit(int64_t planned) const;

  // Call after each optimizer step of the loop, on every rank, with the loop's count so far
  // (from 1): records memory (labelled `step`); calls `save` when `step` is a multiple of
  // checkpoint_every or when `save_now` (the last step, say); then, if the
  // host asked to stop (stop_if_asked), saves unless it just did and throws MLH_ERR_CANCELLED
  // "stopped at <step_name> <step> (checkpoint saved)". A failing save throws its own error
  // instead. Returns true from --max-steps on: a loop whose length step_limit cannot size
  // (epochs of episodes, say) leaves its loops there and ends as at a normal end (its last
  // checkpoint, validation, weights, finish).
  bool after_step(int64_t step, const SaveFn& save, bool save_now = false);

  // Whether to stop here, agreed by every rank (Distributed::should_stop): if so, calls
  // `save` (null: the caller has just saved) and throws mlh::Error(MLH_ERR_CANCELLED,
  // "stopped <where> (checkpoint saved)"). For stops between steps, e.g. "after epoch 3".
  void stop_if_asked(const std::string& where, const SaveFn& save);

  // The run's result: rank 0 writes the module's parameters and buffers to
  // <run_dir>/model.safetensors (export_module_weights, with `metadata`); every rank gets the
  // path back.
  std::string export_weights(const torch::nn::Module& model, std::map<std::string, std::string> metadata = {});
  std::string weights_path() const;

  // Ends the run: adds "world_size", "ranks_agree" (every rank holds the same parameters
  // and buffers as `model`: Distributed::parameters_agree) and, under --max-steps,
  // "max_steps" to `summary` and sends it to the host. Collective.
  void finish(torch::nn::Module& model, nlohmann::json summary);

 private:
  const mlh::RunContext& ctx_;
  c10::Device device_;  // where checkpoints load to
  std::optional<int64_t> max_steps_;  // the plan's --max-steps
  std::optional<RuntimePlan::InitFrom> init_from_;  // the plan's --init-from
  bool max_steps_logged_ = false;
  SessionOptions options_;
  Distributed dist_;
  CheckpointManager checkpoints_;
  MemoryMonitor memory_;
};

}  // namespace mlh::rt
