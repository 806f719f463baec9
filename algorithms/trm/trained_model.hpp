// A trained TRM loaded from its run folder for eval, solve, generate, forward and export:
// model.json rebuilds the model, the checkpoint (best or latest) fills it on the plan's device,
// whatever device trained it, and the EMA weights are used when the run kept them.
#pragma once

#include <memory>
#include <string>

#include <mlh/plugin.hpp>
#include <mlh/runtime/apply_plan.hpp>

#include "config.hpp"
#include "model_record.hpp"
#include "trainer.hpp"

namespace trm {

struct TrainedModel {
  std::string run_dir;  // the trained run's folder (absolute: the plan's trained_run_dir)
  ModelRecord run;
  std::unique_ptr<Trainer> trainer;  // holds the model (and the optimizer the checkpoint needs)
  int64_t step = 0;
  std::string checkpoint_path;
  bool ema_weights = false;

  Trm& model() { return trainer->model(); }
};

TrainedModel load_trained_model(const mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan);

}  // namespace trm
