#include "trainer.hpp"

#include <cmath>
#include <utility>
#include <vector>

#include <mlh/plugin.hpp>
#include <mlh/runtime/device_transfer.hpp>
#include <mlh/runtime/precision.hpp>
#include <torch/nn/utils/clip_grad.h>

namespace trm {

double scheduled_lr(int64_t step, double base_lr, int64_t warmup_steps, int64_t total_steps, double min_ratio) {
  if (step < warmup_steps) return base_lr * static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, warmup_steps));
  const double progress = static_cast<double>(step - warmup_steps) /
                          static_cast<double>(std::max<int64_t>(1, total_steps - warmup_steps));
  return base_lr * (min_ratio + std::max(0.0, (1.0 - min_ratio) * 0.5 * (1.0 + std::cos(M_PI * progress))));
}

BatchTensors host_tensors(const Batch& batch) {
  auto opts = at::TensorOptions().dtype(at::kInt);
  BatchTensors t;
  t.inputs = at::from_blob(const_cast<int32_t*>(batch.inputs.data()), {batch.rows, batch.seq_len}, opts).clone();
  t.labels = at::from_blob(const_cast<int32_t*>(batch.labels.data()), {batch.rows, batch.seq_len}, opts).clone();
  t.puzzle_identifiers =
      at::from_blob(const_cast<int32_t*>(batch.puzzle_identifiers.data()), {batch.rows}, opts).clone();
  return t;
}

BatchTensors to_device(const BatchTensors& host, c10::Device device, bool pinned) {
  return {mlh::rt::to_device(host.inputs, device, pinned), mlh::rt::to_device(host.labels, device, pinned),
          mlh::rt::to_device(host.puzzle_identifiers, device, pinned)};
}

BatchTensors to_tensors(const Batch& batch, c10::Device device) { return to_device(host_tensors(batch), device, false); }

StepBatch prepare_batch(Batch batch, c10::Device device, bool pinned) {
  BatchTensors host = host_tensors(batch);
  host.inputs = mlh::rt::pin_for_transfer(host.inputs, device, pinned);
  host.labels = mlh::rt::pin_for_transfer(host.labels, device, pinned);
  host.puzzle_identifiers = mlh::rt::pin_for_transfer(host.puzzle_identifiers, device, pinned);
  return {std::move(batch), std::move(host)};
}

Trainer::Trainer(const Config& cfg, const mlh::rt::RuntimePlan& plan, const ModelConfig& model_config,
                 mlh::rt::Distributed* dist, const std::function<void(torch::nn::Module&)>& init_weights)
    : cfg_(cfg),
      plan_(plan),
      dist_(dist ? *dist : single_process_),
      model_config_(model_config),
      model_(model_config),
      // fp16 needs loss scaling; bf16 and fp32 do not.
      scaler_(65536.0, 2.0, 0.5, 2000, plan.precision == mlh::rt::Precision::kFp16) {
  model_->to(plan.device);
  model_->train();
  if (init_weights) init_weights(*model_);
  dist_.broadcast_module(*model_);  // before the EMA copies the weights
  // The reference trains with AdamATan2 (pretrain.py); AdamW stays the default. Both start at
  // cfg.lr, and step() sets the scheduled lr on their groups before each update.
  if (cfg.optimizer == "adam_atan2")
    optimizer_ = std::make_unique<AdamATan2>(
        dense_parameters(model_),
        AdamATan2Options(cfg.lr).betas({cfg.beta1, cfg.beta2}).weight_decay(cfg.weight_decay));
  else
    optimizer_ = std::make_unique<torch::optim::AdamW>(
        dense_parameters(model_),
        torch::optim::AdamWOptions(cfg.lr).betas({cfg.beta1, cfg.beta2}).weight_decay(cfg.weight_decay));
  if (auto* embedding = model_->puzzle_embedding()) {
    sign_sgd_ = std::make_unique<SignSgd>(*embedding, cfg.puzzle_emb_lr, cfg.puzzle_emb_weight_decay);
    sign_sgd_->share_with(dist_);
  }
  if (cfg.ema) ema_ = std::make_unique<Ema>(*model_, cfg.ema_rate);
  micro_ = mlh::rt::MicroBatchedStep(nullptr, nullptr, cfg.micro_batch);
}

namespace {

at::Tensor rows_of(const at::Tensor& t, int64_t begin, int64_t count) {
  return t.defined() ? t.narrow(0, begin, count) : t;
}

BatchTensors rows_of(const BatchTensors& b, int64_t begin, int64_t count) {
  return {rows_of(b.inputs, begin, count), rows_of(b.labels, begin, count), rows_of(b.puzzle_identifiers, begin, count)};
}

Carry rows_of(const Carry& c, int64_t begin, int64_t count) {
  return {rows_of(c.z_h, begin, count), rows_of(c.z_l, begin, count), rows_of(c.steps, begin, count),
          rows_of(c.halted, begin, count), rows_of(c.current, begin, count)};
}

at::Tensor joined(const std::vector<Carry>& parts, at::Tensor Carry::*field) {
  std::vector<at::Tensor> ts;
  for (const Carry& c : parts) ts.push_back(c.*field);
  return at::cat(ts);
}

at::Tensor joined(const std::vector<Carry>& parts, at::Tensor BatchTensors::*field) {
  if (!(parts[0].current.*field).defined()) return at::Tensor();
  std::vector<at::Tensor> ts;
  for (const Carry& c : parts) ts.push_back(c.current.*field);
  return at::cat(ts);
}

Carry joined(const std::vector<Carry>& parts) {
  if (parts.size() == 1) return parts[0];
  return {joined(parts, &Carry::z_h), joined(parts, &Carry::z_l), joined(parts, &Carry::steps), joined(parts, &Carry::halted),
          {joined(parts, &BatchTensors::inputs), joined(parts, &BatchTensors::labels),
           joined(parts, &BatchTensors::puzzle_identifiers)}};
}

void add(ActLoss& sum, const ActLoss& part) {
  sum.count += part.count;
  sum.accuracy_sum += part.accuracy_sum;
  sum.exact_sum += part.exact_sum;
  sum.q_halt_accuracy_sum += part.q_halt_accuracy_sum;
  sum.steps_sum += part.steps_sum;
}

}  // namespace

StepStats Trainer::step(const StepBatch& step_batch) {
  const Batch& batch = step_batch.batch;
  const BatchTensors data = to_device(step_batch.host, plan_.device, plan_.pinned_memory);
  if (!carry_) carry_ = model_->initial_carry(data);
  ++step_;
  StepStats s;
  s.lr = scheduled_lr(step_, cfg_.lr, cfg_.lr_warmup_steps, cfg_.train_steps, cfg_.lr_min_ratio);
  for (auto& group : optimizer_->param_groups()) group.options().set_lr(s.lr);

  const auto rows = static_cast<int64_t>(batch.rows);
  ActLoss sums;
  at::Tensor loss;
  std::vector<Carry> carries;  // the micro-batches' next carries, joined once the step succeeded
  bool stepped = false;
  // TRM's forward changes no buffer: nothing for a retry to restore but the RNG.
  micro_.run(
      rows,
      {[&] {
         optimizer_->zero_grad();
         if (sign_sgd_) sign_sgd_->zero_grad();
         sums = ActLoss();
         loss = at::Tensor();
         carries.clear();
       },
       [&](int64_t begin, int64_t count, double) {
         // A copy of the carry's handles: the forward replaces them, and a retry needs the old.
         Carry carry = count == rows ? *carry_ : rows_of(*carry_, begin, count);
         ActLoss out;
         {
           std::optional<mlh::rt::AutocastScope> autocast;
           if (plan_.precision != mlh::rt::Precision::kFp32) autocast.emplace(plan_.precision, plan_.device);
           const StepOutput step_out = model_->forward(carry, count == rows ? data : rows_of(data, begin, count));
           out = act_loss(step_out, carry, cfg_.model.loss == "softmax" ? LossKind::kSoftmax : LossKind::kStablemax);
         }
         // Summed over rows: divided by the whole batch, the micro-batches' losses add up to it.
         const at::Tensor part = out.loss / static_cast<double>(rows);
         scaler_.scale(part).backward();
         loss = loss.defined() ? loss + part.detach() : part.detach();
         add(sums, out);
         carries.push_back(std::move(carry));
       },
       [&] {
         dist_.average_gradients(dense_parameters(model_));
         if (cfg_.grad_clip > 0) {
           if (scaler_.enabled()) scaler_.unscale_(*optimizer_);
           torch::nn::utils::clip_grad_norm_(dense_parameters(model_), cfg_.grad_clip);
         }
         stepped = scaler_.step(*optimizer_);
         if (scaler_.enabled()) scaler_.update();
         if (sign_sgd_) {
           // Its sign is unchanged by the loss scale; a step the scaler skipped is skipped here too.
           if (stepped)
             sign_sgd_->step(scheduled_lr(step_, cfg_.puzzle_emb_lr, cfg_.lr_warmup_steps, cfg_.train_steps, cfg_.lr_min_ratio));
           sign_sgd_->zero_grad();
         }
         optimizer_->zero_grad();
         if (ema_ && stepped) ema_->update();
       }},
      plan_.device);
  carry_ = joined(carries);

  s.skipped = !stepped;
  s.loss = loss.item<double>();
  s.count = sums.count;
  if (sums.count > 0) {
    s.accuracy = sums.accuracy_sum / sums.count;
    s.exact_accuracy = sums.exact_sum / sums.count;
    s.q_halt_accuracy = sums.q_halt_accuracy_sum / sums.count;
    s.steps = sums.steps_sum / sums.count;
  }
  return s;
}

namespace {

// The ACT carry's tensors, by the names a checkpoint keeps them under.
std::vector<std::pair<const char*, at::Tensor*>> carry_tensors(Carry& c) {
  return {{"carry.z_h", &c.z_h},
          {"carry.z_l", &c.z_l},
          {"carry.steps", &c.steps},
          {"carry.halted", &c.halted},
          {"carry.inputs", &c.current.inputs},
          {"carry.labels", &c.current.labels},
          {"carry.puzzle_identifiers", &c.current.puzzle_identifiers}};
}

}  // namespace

mlh::rt::TrainingState Trainer::state() {
  mlh::rt::TrainingState s;
  s.add("model", *model_).add("optimizer", *optimizer_);
  if (ema_) s.add("ema", ema_->state_module());
  s.values["step"] = step_;
  s.values["grad_scaler"] = scaler_.state();
  s.values["micro_batch"] = micro_.state();
  // The ACT carry: the rows still working on their example carry their latent state and the
  // example into the next step, so a resumed run needs it to continue as the uninterrupted
  // one would. Only in one process: every rank has a carry of its own, and rank 0 writes.
  if (carry_ && dist_.world_size() == 1)
    for (const auto& [name, tensor] : carry_tensors(*carry_)) s.tensors[name] = *tensor;
  return s;
}

void Trainer::restored(const mlh::rt::TrainingState& state) {
  if (!state.values.contains("step") || !state.values["step"].is_number_integer())
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "checkpoint: 'step' is missing or not an integer");
  step_ = state.values["step"].get<int64_t>();
  if (state.values.contains("grad_scaler")) scaler_.load_state(state.values["grad_scaler"]);
  if (state.values.contains("micro_batch")) micro_.load_state(state.values["micro_batch"]);
  // A checkpoint of one process holds the carry (state()); one of a distributed run, or an
  // older one, does not: then every sequence starts afresh, as the reference's resume does.
  carry_.reset();
  if (dist_.world_size() != 1) return;
  Carry c;
  for (const auto& [name, tensor] : carry_tensors(c)) {
    const auto it = state.tensors.find(name);
    if (it == state.tensors.end()) return;
    *tensor = it->second;
  }
  carry_ = std::move(c);
}

}  // namespace trm
