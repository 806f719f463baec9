#include "trained_model.hpp"

#include <mlh/runtime/trained_run.hpp>

namespace protonet {

mlh::rt::LoadedCheckpoint load_trained(const mlh::RunContext& ctx, const Config& cfg, Trainer& l) {
  mlh::rt::TrainingState s = l.state();
  // A run without validation (data.trainval) has no best checkpoint: its latest is the result.
  return mlh::rt::load_trained(ctx, s, l.plan.device, cfg.validate ? cfg.checkpoint : "latest", mlh::rt::Goal::Minimize);
}

}  // namespace protonet
