// PPO's run configuration: its fields (config_table: the schema the host validates and the
// defaults, CleanRL's ppo.py CartPole settings, come from it), the presets, and the parsed
// form the commands use. Free of LibTorch.
//
// The plan's batch_size is not PPO's: PPO's batch is num_envs x num_steps transitions per
// iteration, split into num_minibatches. The plan's preset sizes the residual tower when
// network.blocks / network.channels are unset (0): kFullTower for "full", otherwise
// kReducedTower.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <mlh/config_table.hpp>
#include <nlohmann/json.hpp>

#include "env/gymnasium_spec.hpp"

namespace ppo {

// The residual tower's blocks x channels from the plan's model preset, when the config leaves
// network.blocks / network.channels at 0: the presets "full" and "reduced", the table's
// descriptions, network_spec and the run's description all take them from here.
struct ResnetTower {
  int64_t blocks, channels;
};
constexpr ResnetTower kFullTower{30, 192}, kReducedTower{20, 128};
// "30 x 192"
std::string tower_text(const ResnetTower& tower);

struct Config;
const mlh::ConfigTable<Config>& config_table();
const char* config_schema_json();
const char* config_defaults_json();
const char* presets_json();

// The structs below carry no defaults: every value comes from config_table() through
// parse_config (the table is the only place a field's default and bounds are declared).
struct NetworkConfig {
  std::string kind;  // "auto": mlp for cartpole, recursive for puzzles, by shape for a library
  std::vector<int64_t> mlp_hidden;
  int64_t hidden_dim{}, num_heads{}, num_recursive_steps{};
  int64_t blocks{}, channels{};  // 0: from the plan's preset
  std::string module;     // python: "path/to/file.py:Class"
  nlohmann::json kwargs;  // python: its keyword arguments beside observation_shape and num_actions
};

struct CurriculumConfig {
  bool enabled{};
  double promote_at{};  // solve rate over the recent episodes that adds harder puzzles
  int64_t window{};  // episodes the solve rate is measured over
};

struct PuzzleConfig {
  int size{};
  int tiles{};
  double blocked_density{};
  bool multi_color{};
  int max_steps{};
  int min_moves{};  // optimal solution length range of generated puzzles
  int max_moves{};
  CurriculumConfig curriculum;
  std::string train_levels;         // the user's level file or folder to train on ("" = none)
  double train_levels_share{};  // the share of training episodes played on them
  int64_t eval_count{};  // held-out generated puzzles
  uint64_t eval_seed{};  // their generator seed (distinct from training's)
  std::string eval_level_file;     // or a level file ("" = generated)
};

// env=library: the environment's shared library and its own settings (docs/ppo.md,
// "Training on your own environment").
struct LibraryConfig {
  std::string path;
  nlohmann::json settings;  // a JSON object, passed to the library as text
};

struct Config {
  std::string env;
  LibraryConfig library;
  GymnasiumSpec gymnasium;  // env=gymnasium (docs/ppo.md, "Gymnasium environments")
  NetworkConfig network;
  int64_t total_timesteps{};
  int64_t num_envs{}, num_steps{}, num_minibatches{}, update_epochs{};
  double lr{};
  bool anneal_lr{};
  double gamma{}, gae_lambda{}, clip_coef{};
  bool clip_vloss{};
  double ent_coef{}, vf_coef{}, max_grad_norm{};
  bool norm_adv{};
  bool normalize_observations{}, normalize_rewards{};
  std::optional<double> target_kl;
  uint64_t seed{};
  bool mask_invalid_moves{};
  PuzzleConfig puzzle;
  int64_t eval_episodes{};
  int64_t checkpoint_every{};  // iterations
  int keep_checkpoints{};
  std::string checkpoint;  // eval/play: "best" or "latest"
  std::string forward_inputs;  // forward: a safetensors file of observations
  std::string level_file;           // play
  int64_t play_index{};  // play: which level of the file
  bool eval_deterministic{};  // eval/play: argmax instead of sampling

  int64_t batch_size() const { return num_envs * num_steps; }
  int64_t minibatch_size() const { return batch_size() / num_minibatches; }
  int64_t num_iterations() const { return total_timesteps / batch_size(); }
  // kind with "auto" resolved; a library's stays "auto" until its observation shape is known
  // (network_spec resolves it).
  std::string network_kind() const;
};

// Parses a config (missing fields take the defaults). Throws
// mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming the field.
Config parse_config(const nlohmann::json& cfg);

}  // namespace ppo
