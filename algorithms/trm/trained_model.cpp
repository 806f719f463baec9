#include "trained_model.hpp"

#include <mlh/runtime/checkpoint.hpp>
#include <mlh/runtime/trained_run.hpp>
#include <nlohmann/json.hpp>

#include "commands.hpp"

namespace trm {

TrainedModel load_trained_model(const mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan) {
  TrainedModel t;
  t.run_dir = mlh::rt::trained_run_dir(ctx);
  t.run = read_model_record(t.run_dir);
  // The checkpoint holds the EMA when cfg.ema is on: run with --resume so that the host
  // reloads the config that trained it.
  t.trainer = std::make_unique<Trainer>(cfg, plan, t.run.model);
  mlh::rt::TrainingState s = t.trainer->state();
  const mlh::rt::LoadedCheckpoint loaded = mlh::rt::load_trained(ctx, s, plan.device, cfg.checkpoint, mlh::rt::Goal::Maximize);
  t.trainer->restored(s);
  if (Ema* ema = t.trainer->ema()) {
    ema->swap();  // the EMA weights into the model, for good
    t.ema_weights = true;
  }
  t.trainer->model()->eval();
  t.step = loaded.step;
  t.checkpoint_path = loaded.path;
  return t;
}

void export_command(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan) {
  TrainedModel tm = load_trained_model(ctx, cfg, plan);
  mlh::rt::LoadedCheckpoint from;
  from.step = tm.step;
  from.path = tm.checkpoint_path;
  mlh::rt::export_trained(ctx, *tm.model(), weights_metadata(tm.run.model, tm.run.mode, tm.ema_weights), from);
}

}  // namespace trm
