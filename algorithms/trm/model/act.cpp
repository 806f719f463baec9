// The ACT wrapper's carry and step (TinyRecursiveReasoningModel_ACTV1.initial_carry/forward).
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <mlh/plugin.hpp>

#include "model/trm.hpp"

namespace trm {
namespace {

[[noreturn]] void bad(const std::string& message) { throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "TRM forward: " + message); }

std::string shape_of(const at::Tensor& t) {
  if (!t.defined()) return "undefined";
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}

void check_batch(const BatchTensors& batch, const ModelConfig& config) {
  const at::Tensor& in = batch.inputs;
  if (!in.defined() || in.dim() != 2 || in.size(1) != config.seq_len)
    bad("inputs must be [batch, " + std::to_string(config.seq_len) + "], got " + shape_of(in));
  const int64_t b = in.size(0);
  if (batch.labels.defined() && !batch.labels.sizes().equals(in.sizes()))
    bad("labels must be shaped as inputs " + shape_of(in) + ", got " + shape_of(batch.labels));
  const at::Tensor& ids = batch.puzzle_identifiers;
  if (!ids.defined() || ids.numel() != b)
    bad("puzzle_identifiers must be [" + std::to_string(b) + "], got " + shape_of(ids));
  for (const at::Tensor* t : {&in, &ids})
    if (at::isFloatingType(t->scalar_type()) || t->scalar_type() == at::kBool)
      bad("inputs and puzzle_identifiers must be integer tensors");
}

// Rows of `fresh` where `reset`, else rows of `kept`, in kept's dtype.
at::Tensor select_rows(const at::Tensor& reset, const at::Tensor& fresh, const at::Tensor& kept) {
  std::vector<int64_t> shape(static_cast<size_t>(kept.dim()), 1);
  shape[0] = -1;
  return at::where(reset.view(shape), fresh.to(kept.scalar_type()), kept);
}

}  // namespace

Carry TrmImpl::initial_carry(const BatchTensors& batch) {
  check_batch(batch, config_);
  const int64_t b = batch.inputs.size(0);
  const auto device = batch.inputs.device();
  Carry carry;
  // Never read: every row is halted, so the first step replaces them by H_init / L_init.
  const auto state_options = inner->H_init.options().device(device);
  carry.z_h = at::zeros({b, total_seq_len(config_), config_.hidden}, state_options);
  carry.z_l = at::zeros_like(carry.z_h);
  carry.steps = at::zeros({b}, batch.inputs.options().dtype(at::kInt));
  carry.halted = at::ones({b}, batch.inputs.options().dtype(at::kBool));
  carry.current.inputs = at::zeros_like(batch.inputs);
  carry.current.labels = batch.labels.defined() ? at::zeros_like(batch.labels) : at::Tensor();
  carry.current.puzzle_identifiers = at::zeros_like(batch.puzzle_identifiers).view({b});
  return carry;
}

StepOutput TrmImpl::forward(Carry& carry, const BatchTensors& batch) {
  check_batch(batch, config_);
  const int64_t b = batch.inputs.size(0);
  if (!carry.halted.defined() || carry.halted.numel() != b)
    bad("carry is for batch size " + std::to_string(carry.halted.defined() ? carry.halted.numel() : 0) +
        ", the batch has " + std::to_string(b) + " rows");
  if (batch.labels.defined() != carry.current.labels.defined())
    bad("labels must be given at every step or never (the carry was made " +
        std::string(carry.current.labels.defined() ? "with" : "without") + " them)");

  // Restart the rows that halted: initial states, step 0, the new batch's example.
  const at::Tensor& reset = carry.halted;
  const at::Tensor z_h = at::where(reset.view({-1, 1, 1}), inner->H_init.to(carry.z_h.scalar_type()), carry.z_h);
  const at::Tensor z_l = at::where(reset.view({-1, 1, 1}), inner->L_init.to(carry.z_l.scalar_type()), carry.z_l);
  at::Tensor steps = at::where(reset, at::zeros_like(carry.steps), carry.steps);
  BatchTensors current;
  current.inputs = select_rows(reset, batch.inputs, carry.current.inputs);
  if (batch.labels.defined()) current.labels = select_rows(reset, batch.labels, carry.current.labels);
  current.puzzle_identifiers =
      select_rows(reset, batch.puzzle_identifiers.view({b}), carry.current.puzzle_identifiers);

  InnerOutput inner_out = inner->forward(z_h, z_l, current);
  StepOutput out;
  out.logits = inner_out.logits;
  out.q_halt_logits = inner_out.q_halt_logits;
  out.q_continue_logits = inner_out.q_continue_logits;

  at::Tensor halted;
  {
    at::NoGradGuard no_grad;
    steps = steps + 1;
    const at::Tensor is_last_step = steps >= config_.halt_max_steps;
    halted = is_last_step;
    // Eval always runs halt_max_steps so that a batch's rows halt together.
    if (is_training() && config_.halt_max_steps > 1) {
      const at::Tensor& q_halt = inner_out.q_halt_logits;
      halted = config_.no_act_continue ? (halted | (q_halt > 0)) : (halted | (q_halt > inner_out.q_continue_logits));
      // Exploration: with probability prob a row must run at least randint(2, max] steps.
      c10::optional<at::Generator> gen;
      if (halt_generator_) gen = *halt_generator_;
      const at::Tensor explore = at::rand(q_halt.sizes(), gen, q_halt.options()) < config_.halt_exploration_prob;
      const at::Tensor min_steps =
          explore * at::randint(2, config_.halt_max_steps + 1, steps.sizes(), gen, steps.options());
      halted = halted & (steps >= min_steps);
      if (!config_.no_act_continue) {
        // Bootstrapped Q target from the next step (no replay buffer, no target network).
        const InnerOutput next = inner->forward(inner_out.z_h, inner_out.z_l, current);
        out.target_q_continue = at::sigmoid(at::where(
            is_last_step, next.q_halt_logits, at::maximum(next.q_halt_logits, next.q_continue_logits)));
      }
    }
  }

  carry.z_h = inner_out.z_h;
  carry.z_l = inner_out.z_l;
  carry.steps = steps.to(at::kInt);
  carry.halted = halted;
  carry.current = current;
  return out;
}

}  // namespace trm
