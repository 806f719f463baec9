// PPO's forward command: the trained network on the user's observations (tensor
// "observations" of forward.inputs, batch x the network's observation shape, float), in eval
// mode, its "logits" (batch x actions) and "value" (batch) to the command folder's
// outputs.safetensors (mlh/runtime/forward_io.hpp). Any network kind: mlp, recursive, resnet.
// Continuous actions: "mean" (batch x action values) and "log_std" (action values) in place
// of the logits. Observations are raw: the network normalizes them where it was trained to.
#include <ATen/ATen.h>
#include <mlh/runtime/forward_io.hpp>
#include <mlh/runtime/trained_run.hpp>
#include <nlohmann/json.hpp>
#include <torch/utils.h>

#include "commands.hpp"
#include "trained_model.hpp"

namespace ppo {

void forward(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan) {
  // The shape first, from network.json: a bad inputs file fails before the checkpoint loads.
  std::vector<int64_t> shape{-1};
  const NetworkSpec spec = read_network_json(mlh::rt::trained_run_dir(ctx));
  shape.insert(shape.end(), spec.observation_shape.begin(), spec.observation_shape.end());
  const auto inputs = mlh::rt::read_forward_inputs(cfg.forward_inputs, {{"observations", shape}});
  Policy p = load_policy(ctx, cfg, plan);
  torch::NoGradGuard no_grad;
  const PolicyOutput out = p.net->forward(inputs.at("observations").to(plan.device));
  std::map<std::string, at::Tensor> outputs{{"value", out.value}};
  if (spec.continuous_actions) {
    outputs["mean"] = out.logits;
    outputs["log_std"] = p.net->log_std().detach();
  } else {
    outputs["logits"] = out.logits;
  }
  mlh::rt::write_forward_outputs(ctx, outputs, cfg.forward_inputs,
                                 {{"checkpoint", p.path}},
                                 nlohmann::json{{"checkpoint", p.path}, {"step", p.step}}.dump());
}

}  // namespace ppo
