// The inner recursive model (see trm.hpp); the ACT step is in act.cpp.
#include "model/trm.hpp"

#include <cmath>

#include <ATen/ATen.h>
#include <mlh/runtime/compat.hpp>
#include <mlh/runtime/grad_checkpoint.hpp>

namespace trm {

TrmInnerImpl::TrmInnerImpl(const ModelConfig& config)
    : config_(config),
      puzzle_emb_len_(resolved_puzzle_emb_len(config)),
      embed_scale_(std::sqrt(static_cast<double>(config.hidden))) {
  validate(config);
  embed_tokens = register_module("embed_tokens", CastedEmbedding(config.vocab_size, config.hidden, 1.0 / embed_scale_));
  lm_head = register_module("lm_head", CastedLinear(config.hidden, config.vocab_size, false));
  q_head = register_module("q_head", CastedLinear(config.hidden, 2, true));
  if (config.puzzle_emb_ndim > 0)
    puzzle_emb = register_module("puzzle_emb", SparseEmbedding(config.num_puzzle_identifiers, config.puzzle_emb_ndim, 0.0));
  if (!config.mlp_t)
    rotary_emb = register_module(
        "rotary_emb", RotaryEmbedding(config.hidden / config.num_heads, total_seq_len(config), config.rope_theta));
  L_level = register_module("L_level", ReasoningModule(config));
  at::Tensor h_init = at::empty({config.hidden}), l_init = at::empty({config.hidden});
  trunc_normal_(h_init, 1.0);
  trunc_normal_(l_init, 1.0);
  H_init = register_buffer("H_init", h_init);
  L_init = register_buffer("L_init", l_init);
  // Q head starts at (almost) "never halt" for a quiet bootstrap, as the reference.
  at::NoGradGuard no_grad;
  q_head->weight.zero_();
  q_head->bias.fill_(-5.0);
}

at::Tensor TrmInnerImpl::input_embeddings(const at::Tensor& inputs, const at::Tensor& puzzle_identifiers) {
  at::Tensor embedding = embed_tokens->forward(inputs);  // [B, S, hidden]
  if (puzzle_emb) {
    at::Tensor prefix = puzzle_emb->forward(puzzle_identifiers);  // [B, ndim]
    const int64_t pad = puzzle_emb_len_ * config_.hidden - prefix.size(-1);
    if (pad > 0) prefix = at::constant_pad_nd(prefix, {0, pad});
    prefix = prefix.view({-1, puzzle_emb_len_, config_.hidden}).to(embedding.scalar_type());
    embedding = at::cat({prefix, embedding}, -2);
  }
  return embed_scale_ * embedding;
}

at::Tensor TrmInnerImpl::net(const at::Tensor& h, const at::Tensor& injection) {
  at::Tensor cos, sin;
  if (rotary_emb) {
    cos = rotary_emb->cos_cached;
    sin = rotary_emb->sin_cached;
  }
  return L_level->forward(h, injection, cos, sin);
}

at::Tensor TrmInnerImpl::net_maybe_checkpointed(const at::Tensor& h, const at::Tensor& injection) {
  if (!config_.gradient_checkpointing) return net(h, injection);
  // Both tensors are inputs of the checkpoint node: the injection carries the gradient of
  // the token and puzzle embeddings, which a captured tensor would not.
  return mlh::rt::checkpoint(
      [this](const std::vector<at::Tensor>& xs) { return std::vector<at::Tensor>{net(xs[0], xs[1])}; },
      std::vector<at::Tensor>{h, injection})[0];
}

InnerOutput TrmInnerImpl::forward(const at::Tensor& z_h0, const at::Tensor& z_l0, const BatchTensors& batch) {
  // Under autocast the states and the input embeddings travel in the autocast dtype, as the
  // reference's forward_dtype keeps them: every layer then reads and writes half the bytes, and
  // no linear casts its input (the norms still compute in float). Without, in the model's own
  // dtype, whatever dtype a carry from another precision's run brings.
  const auto device = z_h0.device().type();
  const at::ScalarType stream =
      mlh::rt::compat::autocast_enabled(device) ? mlh::rt::compat::autocast_dtype(device) : H_init.scalar_type();
  const at::Tensor x = input_embeddings(batch.inputs, batch.puzzle_identifiers).to(stream);
  at::Tensor z_h = z_h0.to(stream), z_l = z_l0.to(stream);
  {
    // h_cycles - 1 cycles that only move the state: no graph, no activations kept.
    at::NoGradGuard no_grad;
    for (int64_t h = 0; h + 1 < config_.h_cycles; ++h) {
      for (int64_t l = 0; l < config_.l_cycles; ++l) z_l = net(z_l, z_h + x);
      z_h = net(z_h, z_l);
    }
  }
  // The last cycle is the only one backpropagated through (1-step gradient of the paper).
  for (int64_t l = 0; l < config_.l_cycles; ++l) z_l = net_maybe_checkpointed(z_l, z_h + x);
  z_h = net_maybe_checkpointed(z_h, z_l);

  InnerOutput out;
  out.z_h = z_h.detach();
  out.z_l = z_l.detach();
  out.logits = lm_head->forward(z_h).narrow(1, puzzle_emb_len_, config_.seq_len);
  const at::Tensor q = q_head->forward(z_h.select(1, 0)).to(at::kFloat);  // first (prefix) position
  out.q_halt_logits = q.select(-1, 0);
  out.q_continue_logits = q.select(-1, 1);
  return out;
}

TrmImpl::TrmImpl(const ModelConfig& config) : config_(config) {
  validate(config);
  inner = register_module("inner", TrmInner(config));
}

std::vector<at::Tensor> dense_parameters(Trm& model) { return model->parameters(); }

}  // namespace trm
