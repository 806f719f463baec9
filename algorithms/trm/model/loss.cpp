// Stablemax / softmax cross-entropy and the ACT loss head (see loss.hpp).
#include "model/loss.hpp"

#include <ATen/ATen.h>
#include <mlh/plugin.hpp>

namespace trm {
namespace {

at::Tensor stablemax_s(const at::Tensor& x) { return at::where(x < 0, 1.0 / (1.0 - x + 1e-30), x + 1.0); }

void check_logits(const at::Tensor& logits, const at::Tensor& labels, const char* what) {
  if (!logits.defined() || !labels.defined() || logits.dim() < 1 ||
      !logits.sizes().slice(0, logits.dim() - 1).equals(labels.sizes()))
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT,
                     std::string(what) + ": logits must be labels' shape plus the vocabulary axis");
}

}  // namespace

at::Tensor stablemax_cross_entropy(const at::Tensor& logits, const at::Tensor& labels, int64_t ignore_index) {
  check_logits(logits, labels, "stablemax_cross_entropy");
  const at::Tensor s = stablemax_s(logits.to(at::kDouble));
  const at::Tensor logprobs = at::log(s / s.sum(-1, /*keepdim=*/true));
  const at::Tensor valid = labels != ignore_index;
  const at::Tensor index = at::where(valid, labels, at::zeros_like(labels)).to(at::kLong).unsqueeze(-1);
  const at::Tensor picked = logprobs.gather(-1, index).squeeze(-1);
  return -at::where(valid, picked, at::zeros_like(picked));
}

at::Tensor softmax_cross_entropy(const at::Tensor& logits, const at::Tensor& labels, int64_t ignore_index) {
  check_logits(logits, labels, "softmax_cross_entropy");
  const int64_t v = logits.size(-1);
  return at::cross_entropy_loss(logits.to(at::kFloat).reshape({-1, v}), labels.to(at::kLong).reshape({-1}), {},
                                at::Reduction::None, ignore_index)
      .view(labels.sizes());
}

ActLoss act_loss(const StepOutput& output, const Carry& carry, LossKind kind) {
  const at::Tensor& labels = carry.current.labels;
  if (!labels.defined()) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "act_loss: the carry's current data has no labels");
  ActLoss result;
  at::Tensor loss_divisor, seq_correct;
  at::Tensor mask;
  {
    at::NoGradGuard no_grad;
    mask = labels != kIgnoreLabel;
    const at::Tensor loss_counts = mask.sum(-1);
    loss_divisor = loss_counts.clamp_min(1).unsqueeze(-1);
    const at::Tensor is_correct = mask & (output.logits.argmax(-1) == labels);
    seq_correct = is_correct.sum(-1) == loss_counts;
    const at::Tensor valid = carry.halted & (loss_counts > 0);
    const at::Tensor zero = at::zeros({}, output.logits.options().dtype(at::kFloat));
    result.count = valid.sum().item<double>();
    result.accuracy_sum =
        at::where(valid, (is_correct.to(at::kFloat) / loss_divisor).sum(-1), zero).sum().item<double>();
    result.exact_sum = (valid & seq_correct).sum().item<double>();
    result.q_halt_accuracy_sum = (valid & ((output.q_halt_logits >= 0) == seq_correct)).sum().item<double>();
    result.steps_sum = at::where(valid, carry.steps, at::zeros_like(carry.steps)).sum().item<double>();
    result.all_halted = carry.halted.all().item<bool>();
  }
  const at::Tensor per_token = kind == LossKind::kStablemax ? stablemax_cross_entropy(output.logits, labels)
                                                            : softmax_cross_entropy(output.logits, labels);
  const at::Tensor lm_loss = (per_token / loss_divisor).sum();
  const at::Tensor q_halt_loss = at::binary_cross_entropy_with_logits(
      output.q_halt_logits, seq_correct.to(output.q_halt_logits.scalar_type()), {}, {}, at::Reduction::Sum);
  at::Tensor total_q = q_halt_loss;
  result.lm_loss = lm_loss.item<double>();
  result.q_halt_loss = q_halt_loss.item<double>();
  if (output.target_q_continue.defined()) {
    const at::Tensor q_continue_loss = at::binary_cross_entropy_with_logits(
        output.q_continue_logits, output.target_q_continue.to(output.q_continue_logits.scalar_type()), {}, {},
        at::Reduction::Sum);
    result.q_continue_loss = q_continue_loss.item<double>();
    total_q = total_q + q_continue_loss;
  }
  result.loss = lm_loss + 0.5 * total_q;
  return result;
}

}  // namespace trm
