// TRM's forward command: the trained model on the user's token ids (tensor "inputs" of
// forward.inputs, batch x seq_len, and optionally "puzzle_identifiers", batch, default 0), run
// as eval runs it (every ACT step, the EMA weights when kept, the plan's precision), its last
// step's "logits" (batch x seq_len x vocab), "q_halt_logits" and "q_continue_logits" (batch)
// to the command folder's outputs.safetensors (mlh/runtime/forward_io.hpp).
#include <ATen/ATen.h>
#include <mlh/runtime/forward_io.hpp>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "evaluate.hpp"
#include "trained_model.hpp"

namespace trm {

void forward_command(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan) {
  TrainedModel tm = load_trained_model(ctx, cfg, plan);
  const ModelConfig& m = tm.run.model;
  using Kind = mlh::rt::ForwardInput::Kind;
  auto inputs = mlh::rt::read_forward_inputs(
      cfg.forward_inputs, {{"inputs", {-1, m.seq_len}, Kind::kInteger},
                           {"puzzle_identifiers", {-1}, Kind::kInteger, /*required=*/false}});
  const at::Tensor& tokens = inputs.at("inputs");
  const int64_t rows = tokens.size(0);
  if (tokens.numel() && (tokens.min().item<int64_t>() < 0 || tokens.max().item<int64_t>() >= m.vocab_size))
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "forward.inputs '" + cfg.forward_inputs + "': tensor 'inputs' holds ids outside [0, " +
                                                   std::to_string(m.vocab_size) + ") (the model's vocabulary)");
  at::Tensor ids = inputs.count("puzzle_identifiers") ? inputs.at("puzzle_identifiers") : at::zeros({rows}, at::kLong);
  if (ids.numel() && (ids.min().item<int64_t>() < 0 || ids.max().item<int64_t>() >= m.num_puzzle_identifiers))
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "forward.inputs '" + cfg.forward_inputs +
                                                   "': tensor 'puzzle_identifiers' holds ids outside [0, " +
                                                   std::to_string(m.num_puzzle_identifiers) + ")");
  const EvalSettings settings = make_eval_settings(cfg, plan, 0);
  BatchTensors data;
  data.inputs = tokens.to(settings.device);
  data.puzzle_identifiers = ids.to(settings.device);
  const StepOutput out = run_every_step(tm.model(), data, settings);
  mlh::rt::write_forward_outputs(
      ctx,
      {{"logits", out.logits}, {"q_halt_logits", out.q_halt_logits}, {"q_continue_logits", out.q_continue_logits}},
      cfg.forward_inputs, {{"checkpoint", tm.checkpoint_path}, {"ema", tm.ema_weights ? "true" : "false"}},
      nlohmann::json{{"checkpoint", tm.checkpoint_path}, {"step", tm.step}, {"ema", tm.ema_weights}}.dump());
}

}  // namespace trm
