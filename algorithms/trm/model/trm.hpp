// The Tiny Recursive Model (Jolicoeur-Martineau 2025) with its ACT wrapper, as the reference's
// TinyRecursiveReasoningModel_ACTV1 (models/recursive_reasoning/trm.py).
//
// Inner model (TrmInner), from the carry (z_H, z_L) and the input embedding x:
//   x = sqrt(hidden) * cat(puzzle prefix, embed_tokens(inputs))
//   no grad: repeat h_cycles-1 times { l_cycles times z_L = net(z_L, z_H + x); z_H = net(z_H, z_L) }
//   with grad, once:                 { l_cycles times z_L = net(z_L, z_H + x); z_H = net(z_H, z_L) }
//   logits = lm_head(z_H)[:, prefix:], (q_halt, q_continue) = q_head(z_H[:, 0]) in float32,
//   next carry = (z_H, z_L) detached.
// One net (ReasoningModule) serves both updates. With gradient_checkpointing, each net call of
// the grad cycle is recomputed in backward (mlh::rt::checkpoint); gradients are the same.
//
// ACT wrapper (TrmImpl::forward, one step): rows that halted at the previous step restart
// (states H_init/L_init, steps 0, data taken from the new batch's rows); the others keep their
// carry and data. After the inner model, steps += 1 and halted = steps >= halt_max_steps; in
// training with halt_max_steps > 1 also halted |= q_halt > 0 (q_halt > q_continue when
// !no_act_continue), then the exploration min_halt_steps = (rand < prob) * randint(2,
// halt_max_steps + 1) and halted &= steps >= min_halt_steps. In eval, rows halt only at
// halt_max_steps. When !no_act_continue (training) a second, no-grad inner pass from the new
// carry gives target_q_continue = sigmoid(is_last_step ? next_q_halt : max(next_q_halt,
// next_q_continue)).
//
// Randomness: the exploration draws (a uniform and a randint per row, every training step
// with halt_max_steps > 1, whatever the probability) come from the generator set with
// set_halt_generator(), or, without one, from the default generator of the states' device
// (seed it with mlh::rt seeding / at::manual_seed).
//
// Parameter names match the reference's state_dict: inner.embed_tokens.embedding_weight,
// inner.lm_head.weight, inner.q_head.{weight,bias}, inner.L_level.layers.<i>..., buffers
// inner.H_init, inner.L_init, inner.puzzle_emb.weights, inner.rotary_emb.{cos,sin}_cached.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <ATen/Tensor.h>
#include <ATen/core/Generator.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include "model/layers.hpp"
#include "model/model_config.hpp"
#include "model/sparse_embedding.hpp"

namespace trm {

struct BatchTensors {
  at::Tensor inputs, labels, puzzle_identifiers;  // int32/int64 [B, S], [B, S], [B]
};

struct Carry {
  at::Tensor z_h, z_l;  // [B, seq_len + prefix, hidden]
  at::Tensor steps;     // int32 [B]: ACT steps taken by each row's current example
  at::Tensor halted;    // bool [B]: the row restarts with a new example at the next step
  BatchTensors current; // each row's current example
};

struct StepOutput {
  at::Tensor logits;                           // [B, seq_len, vocab]
  at::Tensor q_halt_logits, q_continue_logits; // [B] float32
  at::Tensor target_q_continue;                // [B]; undefined unless !no_act_continue in training
};

struct InnerOutput {
  at::Tensor z_h, z_l;  // the next carry, detached
  at::Tensor logits, q_halt_logits, q_continue_logits;
};

class TrmInnerImpl : public torch::nn::Module {
 public:
  explicit TrmInnerImpl(const ModelConfig& config);

  // [B, seq_len + prefix, hidden]: sqrt(hidden) * (puzzle prefix ++ token embeddings).
  at::Tensor input_embeddings(const at::Tensor& inputs, const at::Tensor& puzzle_identifiers);
  // One net call: net(h, injection) with this model's RoPE tables.
  at::Tensor net(const at::Tensor& h, const at::Tensor& injection);
  InnerOutput forward(const at::Tensor& z_h, const at::Tensor& z_l, const BatchTensors& batch);

  int64_t puzzle_emb_len() const { return puzzle_emb_len_; }

  CastedEmbedding embed_tokens{nullptr};
  CastedLinear lm_head{nullptr}, q_head{nullptr};
  SparseEmbedding puzzle_emb{nullptr};   // null when puzzle_emb_ndim == 0
  RotaryEmbedding rotary_emb{nullptr};   // null in the mlp_t variant
  ReasoningModule L_level{nullptr};      // the net
  at::Tensor H_init, L_init;             // buffers [hidden]

 private:
  // net(h, injection), through mlh::rt::checkpoint when gradient checkpointing is on.
  at::Tensor net_maybe_checkpointed(const at::Tensor& h, const at::Tensor& injection);

  ModelConfig config_;
  int64_t puzzle_emb_len_;
  double embed_scale_;
};
TORCH_MODULE(TrmInner);

class TrmImpl : public torch::nn::Module {
 public:
  // Validates the config (mlh::Error naming the field).
  explicit TrmImpl(const ModelConfig& config);
  const ModelConfig& config() const { return config_; }

  // A carry for batches shaped like `batch` (on its device): every row halted, so the first
  // forward loads the batch and starts from H_init/L_init.
  Carry initial_carry(const BatchTensors& batch);
  // One ACT step; updates `carry` in place. Batch and carry must have the same batch size
  // and shapes (mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming the field otherwise).
  StepOutput forward(Carry& carry, const BatchTensors& batch);

  // The generator of the exploration draws (one of the states' device: a CPU generator for a
  // CPU model, a CUDA one for CUDA); std::nullopt: the device's default generator.
  void set_halt_generator(std::optional<at::Generator> generator) { halt_generator_ = std::move(generator); }

  // The puzzle embedding (for SignSgd), or nullptr when puzzle_emb_ndim == 0.
  SparseEmbeddingImpl* puzzle_embedding() { return inner->puzzle_emb ? inner->puzzle_emb.get() : nullptr; }

  TrmInner inner{nullptr};

 private:
  ModelConfig config_;
  std::optional<at::Generator> halt_generator_;
};
TORCH_MODULE(Trm);

// Every parameter that the main optimizer (AdamW) trains: all of the model's parameters. The
// puzzle embedding is a buffer (trained by SignSgd), so it is never among them.
std::vector<at::Tensor> dense_parameters(Trm& model);

}  // namespace trm
