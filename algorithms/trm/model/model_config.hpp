// The TRM model's hyper-parameters (the reference's TinyRecursiveReasoningModel_ACTV1Config
// less batch_size, H_layers and forward_dtype, which LibTorch does not need: precision comes
// from the trainer's autocast scope) and their JSON form.
#pragma once

#include <cstdint>

#include <nlohmann/json_fwd.hpp>

namespace trm {

struct ModelConfig {
  int64_t seq_len = 81, vocab_size = 11;
  int64_t num_puzzle_identifiers = 1;
  int64_t puzzle_emb_ndim = 0;        // 0: no puzzle embedding
  int64_t puzzle_emb_len = 0;         // prefix positions; 0: ceil(puzzle_emb_ndim / hidden)
  int64_t hidden = 512, num_heads = 8;
  double expansion = 4.0;
  int64_t h_cycles = 3, l_cycles = 6, l_layers = 2;
  int64_t halt_max_steps = 16;
  double halt_exploration_prob = 0.1;
  bool no_act_continue = true;        // reference default: only the halt logit
  bool mlp_t = false;                 // the MLP variant: SwiGLU across the sequence axis instead of attention
  bool causal = false;                // text mode
  double rope_theta = 10000.0, rms_norm_eps = 1e-5;
  bool gradient_checkpointing = false;  // recompute each net() call of the grad H-cycle in backward (mlh::rt::checkpoint)
};

// The prefix length actually used: puzzle_emb_len, or ceil(puzzle_emb_ndim / hidden) when it
// is 0, as the reference; always 0 without a puzzle embedding (puzzle_emb_ndim 0), where the
// reference would fail on a non-zero puzzle_emb_len (its carry and inputs would not match).
int64_t resolved_puzzle_emb_len(const ModelConfig& config);
// seq_len + the prefix: the length of the hidden states z_H, z_L.
int64_t total_seq_len(const ModelConfig& config);

// Throws mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming the first field that is out of range
// (sizes < 1, hidden not a multiple of num_heads, an odd head size (RoPE), a prefix too short
// for puzzle_emb_ndim, halt_exploration_prob outside [0, 1], causal with mlp_t...).
void validate(const ModelConfig& config);

// Every field, by its C++ name.
nlohmann::json to_json(const ModelConfig& config);
// Missing fields keep their defaults; an unknown field, a value of the wrong type or a config
// that does not validate is an mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming the field.
ModelConfig model_config_from_json(const nlohmann::json& json);

}  // namespace trm
