#include "flops.hpp"

#include "model/layers.hpp"

namespace trm {
namespace {

double heads_flops(const ModelConfig& c) {
  const auto h = static_cast<double>(c.hidden);
  return 2.0 * static_cast<double>(c.seq_len) * h * static_cast<double>(c.vocab_size) + 2.0 * h * 2.0;  // lm_head, q_head
}

}  // namespace

double net_call_flops(const ModelConfig& c) {
  const auto s = static_cast<double>(total_seq_len(c));
  const auto h = static_cast<double>(c.hidden);
  double mixer;
  if (c.mlp_t) {
    // A SwiGLU over the sequence axis, once per hidden channel.
    mixer = 6.0 * s * static_cast<double>(swiglu_intermediate(total_seq_len(c), c.expansion)) * h;
  } else {
    mixer = 8.0 * s * h * h + 4.0 * s * s * h;  // qkv and output projections; scores and weighted values
  }
  const double mlp = 6.0 * s * h * static_cast<double>(swiglu_intermediate(c.hidden, c.expansion));
  return static_cast<double>(c.l_layers) * (mixer + mlp);
}

double forward_flops_per_step(const ModelConfig& c) {
  return static_cast<double>(c.h_cycles * (c.l_cycles + 1)) * net_call_flops(c) + heads_flops(c);
}

double train_flops_per_step(const ModelConfig& c) {
  double flops = forward_flops_per_step(c) + 2.0 * (static_cast<double>(c.l_cycles + 1) * net_call_flops(c) + heads_flops(c));
  if (!c.no_act_continue && c.halt_max_steps > 1) flops += forward_flops_per_step(c);
  return flops;
}

}  // namespace trm
