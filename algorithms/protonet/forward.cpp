// ProtoNet's forward command: the trained encoder's embeddings of the user's images (tensor
// "images" of forward.inputs, shaped as the run trained: batch x channels x height x width,
// the pixels / 255), in eval mode, to the command folder's outputs.safetensors as
// "embeddings" (mlh/runtime/forward_io.hpp).
#include <ATen/ATen.h>
#include <mlh/runtime/forward_io.hpp>
#include <nlohmann/json.hpp>
#include <torch/utils.h>

#include "commands.hpp"
#include "trained_model.hpp"
#include "trainer.hpp"

namespace protonet {

void forward(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan, const DataSources&) {
  const int64_t channels = loaded_channels(cfg.train_data);
  const auto inputs = mlh::rt::read_forward_inputs(
      cfg.forward_inputs, {{"images", {-1, channels, cfg.train_data.height, cfg.train_data.width}}});
  Trainer l(cfg, channels, plan);
  const mlh::rt::LoadedCheckpoint loaded = load_trained(ctx, cfg, l);
  torch::NoGradGuard no_grad;
  l.net->eval();
  const at::Tensor embeddings = l.net->forward(inputs.at("images").to(plan.device));
  mlh::rt::write_forward_outputs(ctx, {{"embeddings", embeddings}}, cfg.forward_inputs,
                                 {{"checkpoint", loaded.path}},
                                 nlohmann::json{{"checkpoint", loaded.path}, {"step", loaded.step}}.dump());
}

}  // namespace protonet
