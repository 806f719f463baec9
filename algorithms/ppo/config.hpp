// PPO's run configuration: its fields (config_table: the schema the host validates and the
// defaults, CleanRL's ppo.py CartPole settings, come from it), the presets, and the parsed
// form the commands use. Free of LibTorch.
//
// The plan's batch_size is not PPO's: PPO's batch is num_envs x num_steps transitions per
// iteration, split into num_minibatches. The plan's preset sizes the residual tower when
// network.blocks / network.channels are unset (0): "full" 30 x 192, otherwise 20 x 128.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <mlh/config_table.hpp>
#include <nlohmann/json.hpp>

namespace ppo {

struct Config;
const mlh::ConfigTable<Config>& config_table();
const char* config_schema_json();
const char* config_defaults_json();
const char* presets_json();

struct NetworkConfig {
  std::string kind = "auto";  // "auto": mlp for cartpole, recursive for puzzles
  std::vector<int64_t> mlp_hidden{64, 64};
  int64_t hidden_dim = 256, num_heads = 4, num_recursive_steps = 3;
  int64_t blocks = 0, channels = 0;  // 0: from the plan's preset
};

struct CurriculumConfig {
  bool enabled = true;
  double promote_at = 0.8;  // solve rate over the recent episodes that adds harder puzzles
  int64_t window = 200;     // episodes the solve rate is measured over
};

struct PuzzleConfig {
  int size = 4;
  int tiles = 1;
  double blocked_density = 0.15;
  bool multi_color = false;
  int max_steps = 100;
  int min_moves = 1;   // optimal solution length range of generated puzzles
  int max_moves = 8;
  CurriculumConfig curriculum;
  std::string train_levels;         // the user's level file or folder to train on ("" = none)
  double train_levels_share = 1.0;  // the share of training episodes played on them
  int64_t eval_count = 200;        // held-out generated puzzles
  uint64_t eval_seed = 1000003;    // their generator seed (distinct from training's)
  std::string eval_level_file;     // or a level file ("" = generated)
};

struct Config {
  std::string env = "cartpole";
  NetworkConfig network;
  int64_t total_timesteps = 500000;
  int64_t num_envs = 4, num_steps = 128, num_minibatches = 4, update_epochs = 4;
  double lr = 2.5e-4;
  bool anneal_lr = true;
  double gamma = 0.99, gae_lambda = 0.95, clip_coef = 0.2;
  bool clip_vloss = true;
  double ent_coef = 0.01, vf_coef = 0.5, max_grad_norm = 0.5;
  bool norm_adv = true;
  std::optional<double> target_kl;
  uint64_t seed = 1;
  bool mask_invalid_moves = true;
  PuzzleConfig puzzle;
  int64_t eval_episodes = 100;
  int64_t checkpoint_every = 50;  // iterations
  int keep_checkpoints = 3;
  std::string checkpoint = "best";  // eval/play: "best" or "latest"
  std::string level_file;           // play
  int64_t play_index = 0;           // play: which level of the file
  bool eval_deterministic = true;   // eval/play: argmax instead of sampling

  int64_t batch_size() const { return num_envs * num_steps; }
  int64_t minibatch_size() const { return batch_size() / num_minibatches; }
  int64_t num_iterations() const { return total_timesteps / batch_size(); }
  std::string network_kind() const;  // kind with "auto" resolved
};

// Parses a config (missing fields take the defaults). Throws
// mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming the field.
Config parse_config(const nlohmann::json& cfg);

}  // namespace ppo
