// Tiny configs and batches shared by the TRM model tests.
#pragma once

#include <cstdint>

#include <ATen/ATen.h>

#include "model/trm.hpp"

namespace trm_test {

// hidden 32, 2 heads, seq 8, vocab 6; 2 H-cycles of 2 L-cycles with one layer: fast. Every
// field named (ModelConfig has no defaults; -Wextra flags one left out).
inline trm::ModelConfig tiny_config() {
  return trm::ModelConfig{.seq_len = 8,
                          .vocab_size = 6,
                          .num_puzzle_identifiers = 1,
                          .puzzle_emb_ndim = 0,
                          .puzzle_emb_len = 0,
                          .hidden = 32,
                          .num_heads = 2,
                          .expansion = 2.0,
                          .h_cycles = 2,
                          .l_cycles = 2,
                          .l_layers = 1,
                          .halt_max_steps = 4,
                          .halt_exploration_prob = 0.0,
                          .no_act_continue = true,
                          .mlp_t = false,
                          .causal = false,
                          .rope_theta = 10000.0,
                          .rms_norm_eps = trm::kRmsNormEps,
                          .gradient_checkpointing = false};
}

// Random tokens in [0, vocab), labels = (token + 1) mod vocab, identifiers in [0, ids).
inline trm::BatchTensors make_batch(const trm::ModelConfig& c, int64_t b, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  trm::BatchTensors batch;
  batch.inputs = at::randint(0, c.vocab_size, {b, c.seq_len}, gen, at::kInt);
  batch.labels = (batch.inputs + 1).remainder(c.vocab_size).to(at::kInt);
  batch.puzzle_identifiers = at::randint(0, c.num_puzzle_identifiers, {b}, gen, at::kInt);
  return batch;
}

}  // namespace trm_test
