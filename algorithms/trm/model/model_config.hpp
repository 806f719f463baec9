// The TRM model's hyper-parameters (the reference's TinyRecursiveReasoningModel_ACTV1Config
// less batch_size, H_layers and forward_dtype, which LibTorch does not need: precision comes
// from the trainer's autocast scope) and their JSON form.
#pragma once

#include <cstdint>

#include <nlohmann/json_fwd.hpp>

namespace trm {

// No member has a default: every value comes from the run's config (model_record.hpp's
// puzzle_model_config / text_model_config, the config table's defaults) or from a saved
// model.json, which holds every field. Value-initialize (`ModelConfig{}`) before filling one.
struct ModelConfig {
  int64_t seq_len, vocab_size;
  int64_t num_puzzle_identifiers;
  int64_t puzzle_emb_ndim;            // 0: no puzzle embedding
  int64_t puzzle_emb_len;             // prefix positions; 0: ceil(puzzle_emb_ndim / hidden)
  int64_t hidden, num_heads;
  double expansion;
  int64_t h_cycles, l_cycles, l_layers;
  int64_t halt_max_steps;
  double halt_exploration_prob;
  bool no_act_continue;               // true: only the halt logit (the reference's default)
  bool mlp_t;                         // the MLP variant: SwiGLU across the sequence axis instead of attention
  bool causal;                        // text mode
  double rope_theta, rms_norm_eps;
  bool gradient_checkpointing;        // recompute each net() call of the grad H-cycle in backward (mlh::rt::checkpoint)
};

// The reference's RMSNorm epsilon (its rms_norm(variance_epsilon=1e-5)); not a config field.
inline constexpr double kRmsNormEps = 1e-5;

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

// Every field by its C++ name, less gradient_checkpointing: how a plan runs the model, not what
// the model is (model.json and the weights' metadata hold the model).
nlohmann::json to_json(const ModelConfig& config);
// Every field to_json writes is required (model.json has held every one since its first
// version); gradient_checkpointing is read as false, for the loading plan to set. A
// missing or unknown field, a value of the wrong type or a config that does not validate is an
// mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming the field.
ModelConfig model_config_from_json(const nlohmann::json& json);

}  // namespace trm
