// Tiny configs and batches shared by the TRM model tests.
#pragma once

#include <cstdint>

#include <ATen/ATen.h>

#include "model/trm.hpp"

namespace trm_test {

// hidden 32, 2 heads, seq 8, vocab 6; 2 H-cycles of 2 L-cycles with one layer: fast.
inline trm::ModelConfig tiny_config() {
  trm::ModelConfig c;
  c.seq_len = 8;
  c.vocab_size = 6;
  c.hidden = 32;
  c.num_heads = 2;
  c.expansion = 2.0;
  c.h_cycles = 2;
  c.l_cycles = 2;
  c.l_layers = 1;
  c.halt_max_steps = 4;
  c.halt_exploration_prob = 0.0;
  return c;
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
