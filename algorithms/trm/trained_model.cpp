#include "trained_model.hpp"

#include <mlh/runtime/checkpoint.hpp>
#include <mlh/runtime/trained_run.hpp>

namespace trm {

TrainedModel load_trained_model(const mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan) {
  TrainedModel t;
  const std::string trained = mlh::rt::trained_run_dir(ctx);
  t.run = read_run_model(trained);
  // The checkpoint holds the EMA when cfg.ema is on: run with --resume so that the host
  // reloads the config that trained it.
  t.trainer = std::make_unique<Trainer>(cfg, plan, t.run.model);
  mlh::rt::CheckpointManager checkpoints(trained, cfg.keep_checkpoints, mlh::rt::Goal::Maximize,
                                         [&](const std::string& w) { ctx.warn(w); });
  mlh::rt::TrainingState s = t.trainer->state();
  auto loaded = cfg.checkpoint == "latest" ? checkpoints.load_latest(s, plan.device) : checkpoints.load_best(s, plan.device);
  if (!loaded && cfg.checkpoint == "best") loaded = checkpoints.load_latest(s, plan.device);
  if (!loaded) throw mlh::Error(MLH_ERR_IO, "no checkpoint in the run folder ('" + checkpoints.dir() + "'): train first");
  t.trainer->restored(s);
  if (Ema* ema = t.trainer->ema()) {
    ema->swap();  // the EMA weights into the model, for good
    t.ema_weights = true;
  }
  t.trainer->model()->eval();
  t.step = loaded->step;
  t.checkpoint_path = loaded->path;
  return t;
}

}  // namespace trm
