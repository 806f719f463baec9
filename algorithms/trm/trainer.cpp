#include "trainer.hpp"

#include <cmath>

#include <mlh/plugin.hpp>
#include <mlh/runtime/precision.hpp>
#include <torch/nn/utils/clip_grad.h>

namespace trm {

double scheduled_lr(int64_t step, double base_lr, int64_t warmup_steps, int64_t total_steps, double min_ratio) {
  if (step < warmup_steps) return base_lr * static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, warmup_steps));
  const double progress = static_cast<double>(step - warmup_steps) /
                          static_cast<double>(std::max<int64_t>(1, total_steps - warmup_steps));
  return base_lr * (min_ratio + std::max(0.0, (1.0 - min_ratio) * 0.5 * (1.0 + std::cos(M_PI * progress))));
}

BatchTensors to_tensors(const Batch& batch, c10::Device device) {
  auto opts = at::TensorOptions().dtype(at::kInt);
  BatchTensors t;
  t.inputs = at::from_blob(const_cast<int32_t*>(batch.inputs.data()), {batch.rows, batch.seq_len}, opts).clone();
  t.labels = at::from_blob(const_cast<int32_t*>(batch.labels.data()), {batch.rows, batch.seq_len}, opts).clone();
  t.puzzle_identifiers =
      at::from_blob(const_cast<int32_t*>(batch.puzzle_identifiers.data()), {batch.rows}, opts).clone();
  if (device.type() != c10::DeviceType::CPU) {
    t.inputs = t.inputs.to(device);
    t.labels = t.labels.to(device);
    t.puzzle_identifiers = t.puzzle_identifiers.to(device);
  }
  return t;
}

Trainer::Trainer(const Config& cfg, const mlh::rt::RuntimePlan& plan, const ModelConfig& model_config,
                 mlh::rt::Distributed* dist)
    : cfg_(cfg),
      plan_(plan),
      dist_(dist ? *dist : single_process_),
      model_config_(model_config),
      model_(model_config),
      // fp16 needs loss scaling; bf16 and fp32 do not.
      scaler_(65536.0, 2.0, 0.5, 2000, plan.precision == mlh::rt::Precision::kFp16) {
  model_->to(plan.device);
  model_->train();
  dist_.broadcast_module(*model_);  // before the EMA copies the weights
  adamw_ = std::make_unique<torch::optim::AdamW>(
      dense_parameters(model_),
      torch::optim::AdamWOptions(cfg.lr).betas({cfg.beta1, cfg.beta2}).weight_decay(cfg.weight_decay));
  if (auto* embedding = model_->puzzle_embedding()) {
    sign_sgd_ = std::make_unique<SignSgd>(*embedding, cfg.puzzle_emb_lr, cfg.puzzle_emb_weight_decay);
    sign_sgd_->share_with(dist_);
  }
  if (cfg.ema) ema_ = std::make_unique<Ema>(*model_, cfg.ema_rate);
}

StepStats Trainer::step(const Batch& batch) {
  const BatchTensors data = to_tensors(batch, plan_.device);
  if (!carry_) carry_ = model_->initial_carry(data);
  ++step_;
  StepStats s;
  s.lr = scheduled_lr(step_, cfg_.lr, cfg_.lr_warmup_steps, cfg_.train_steps, cfg_.lr_min_ratio);
  for (auto& group : adamw_->param_groups()) group.options().set_lr(s.lr);

  ActLoss out;
  {
    std::optional<mlh::rt::AutocastScope> autocast;
    if (plan_.precision != mlh::rt::Precision::kFp32) autocast.emplace(plan_.precision, plan_.device);
    const StepOutput step_out = model_->forward(*carry_, data);
    out = act_loss(step_out, *carry_, cfg_.model.loss == "softmax" ? LossKind::kSoftmax : LossKind::kStablemax);
  }
  const at::Tensor loss = out.loss / static_cast<double>(batch.rows);
  scaler_.scale(loss).backward();
  dist_.average_gradients(dense_parameters(model_));
  if (cfg_.grad_clip > 0) {
    if (scaler_.enabled()) scaler_.unscale_(*adamw_);
    torch::nn::utils::clip_grad_norm_(dense_parameters(model_), cfg_.grad_clip);
  }
  const bool stepped = scaler_.step(*adamw_);
  if (scaler_.enabled()) scaler_.update();
  if (sign_sgd_) {
    // Its sign is unchanged by the loss scale; a step the scaler skipped is skipped here too.
    if (stepped)
      sign_sgd_->step(scheduled_lr(step_, cfg_.puzzle_emb_lr, cfg_.lr_warmup_steps, cfg_.train_steps, cfg_.lr_min_ratio));
    sign_sgd_->zero_grad();
  }
  adamw_->zero_grad();
  if (ema_ && stepped) ema_->update();

  s.skipped = !stepped;
  s.loss = loss.item<double>();
  s.count = out.count;
  if (out.count > 0) {
    s.accuracy = out.accuracy_sum / out.count;
    s.exact_accuracy = out.exact_sum / out.count;
    s.q_halt_accuracy = out.q_halt_accuracy_sum / out.count;
    s.steps = out.steps_sum / out.count;
  }
  return s;
}

mlh::rt::TrainingState Trainer::state() {
  mlh::rt::TrainingState s;
  s.add("model", *model_).add("optimizer", *adamw_);
  if (ema_) s.add("ema", ema_->state_module());
  s.values["step"] = step_;
  s.values["grad_scaler"] = scaler_.state();
  return s;
}

void Trainer::restored(const mlh::rt::TrainingState& state) {
  if (!state.values.contains("step") || !state.values["step"].is_number_integer())
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "checkpoint: 'step' is missing or not an integer");
  step_ = state.values["step"].get<int64_t>();
  if (state.values.contains("grad_scaler")) scaler_.load_state(state.values["grad_scaler"]);
  carry_.reset();  // as the reference: a resumed run starts every sequence afresh
}

}  // namespace trm
