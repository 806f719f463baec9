#include "config.hpp"

#include <mlh/config_fields.hpp>
#include <mlh/plugin.hpp>

namespace ppo {

using nlohmann::json;
using mlh::config_check;
using mlh::config_field;

const char* config_schema_json() {
  return R"json({
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "preset": {"type": "string", "description": "a preset of this algorithm (cartpole, puzzle4, puzzle5, full, reduced)"},
    "env": {"enum": ["cartpole", "puzzle"]},
    "network": {
      "type": "object",
      "additionalProperties": false,
      "properties": {
        "kind": {"enum": ["auto", "mlp", "recursive", "resnet"], "description": "auto: mlp for cartpole, recursive for puzzles"},
        "mlp_hidden": {"type": "array", "items": {"type": "integer", "minimum": 1}},
        "hidden_dim": {"type": "integer", "minimum": 1},
        "num_heads": {"type": "integer", "minimum": 1},
        "num_recursive_steps": {"type": "integer", "minimum": 1},
        "blocks": {"type": "integer", "minimum": 0, "description": "resnet: 0 = from the plan's preset (full 30, else 20)"},
        "channels": {"type": "integer", "minimum": 0, "description": "resnet: 0 = from the plan's preset (full 192, else 128)"}
      }
    },
    "total_timesteps": {"type": "integer", "minimum": 1},
    "num_envs": {"type": "integer", "minimum": 1},
    "num_steps": {"type": "integer", "minimum": 1, "description": "steps per env per iteration; PPO's batch is num_envs x num_steps"},
    "num_minibatches": {"type": "integer", "minimum": 1},
    "update_epochs": {"type": "integer", "minimum": 1},
    "lr": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
    "anneal_lr": {"type": "boolean"},
    "gamma": {"type": "number", "minimum": 0, "maximum": 1},
    "gae_lambda": {"type": "number", "minimum": 0, "maximum": 1},
    "clip_coef": {"type": "number", "exclusiveMinimum": 0},
    "clip_vloss": {"type": "boolean"},
    "ent_coef": {"type": "number", "minimum": 0},
    "vf_coef": {"type": "number", "minimum": 0},
    "max_grad_norm": {"type": "number", "exclusiveMinimum": 0},
    "norm_adv": {"type": "boolean"},
    "target_kl": {"type": ["number", "null"], "exclusiveMinimum": 0, "description": "stop an update's epochs once approx_kl exceeds it (null: off)"},
    "seed": {"type": "integer", "minimum": 0},
    "mask_invalid_moves": {"type": "boolean", "description": "puzzles: give moves that change nothing probability 0"},
    "puzzle": {
      "type": "object",
      "additionalProperties": false,
      "properties": {
        "size": {"type": "integer", "minimum": 2, "maximum": 16},
        "tiles": {"type": "integer", "minimum": 1},
        "blocked_density": {"type": "number", "minimum": 0, "maximum": 0.9},
        "multi_color": {"type": "boolean"},
        "max_steps": {"type": "integer", "minimum": 1, "description": "step limit of an episode (failure, -5)"},
        "min_moves": {"type": "integer", "minimum": 1, "description": "shortest optimal solution of generated puzzles"},
        "max_moves": {"type": "integer", "minimum": 1, "description": "longest optimal solution of generated puzzles"},
        "curriculum": {
          "type": "object",
          "additionalProperties": false,
          "properties": {
            "enabled": {"type": "boolean"},
            "promote_at": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
            "window": {"type": "integer", "minimum": 1}
          }
        },
        "eval_count": {"type": "integer", "minimum": 1, "description": "held-out generated puzzles for eval"},
        "eval_seed": {"type": "integer", "minimum": 0},
        "eval_level_file": {"type": "string", "description": "eval on this level file instead of generated puzzles"}
      }
    },
    "eval_episodes": {"type": "integer", "minimum": 1, "description": "cartpole eval episodes"},
    "checkpoint_every": {"type": "integer", "minimum": 1, "description": "iterations"},
    "keep_checkpoints": {"type": "integer", "minimum": 1},
    "checkpoint": {"enum": ["best", "latest"]},
    "level_file": {"type": "string", "description": "play: the level file"},
    "play_index": {"type": "integer", "minimum": 0, "description": "play: the level's index in the file"},
    "eval_deterministic": {"type": "boolean", "description": "eval/play: the most probable action (else sampled)"},
    "torch_threads": {"type": "integer", "minimum": 0, "description": "LibTorch intra-op threads; 0 = the plan's"}
  }
})json";
}

const char* config_defaults_json() {
  return R"json({
  "env": "cartpole",
  "network": {"kind": "auto", "mlp_hidden": [64, 64], "hidden_dim": 256, "num_heads": 4,
              "num_recursive_steps": 3, "blocks": 0, "channels": 0},
  "total_timesteps": 500000, "num_envs": 4, "num_steps": 128, "num_minibatches": 4, "update_epochs": 4,
  "lr": 0.00025, "anneal_lr": true, "gamma": 0.99, "gae_lambda": 0.95, "clip_coef": 0.2,
  "clip_vloss": true, "ent_coef": 0.01, "vf_coef": 0.5, "max_grad_norm": 0.5, "norm_adv": true,
  "target_kl": null, "seed": 1, "mask_invalid_moves": true,
  "puzzle": {"size": 4, "tiles": 1, "blocked_density": 0.15, "multi_color": false, "max_steps": 100,
             "min_moves": 1, "max_moves": 8,
             "curriculum": {"enabled": true, "promote_at": 0.8, "window": 200},
             "eval_count": 200, "eval_seed": 1000003, "eval_level_file": ""},
  "eval_episodes": 100, "checkpoint_every": 50, "keep_checkpoints": 3, "checkpoint": "best",
  "level_file": "", "play_index": 0, "eval_deterministic": true, "torch_threads": 0
})json";
}

// full/reduced are the plan's model-size presets (they size the residual tower: the MLP and
// the recursive net are the tasks' own size in both); cartpole,
// puzzle4 and puzzle5 are task presets (--set preset=puzzle4). The puzzle presets use a
// step limit of twice the longest optimal length (instead of the default 100) so that a
// random policy fails often enough for solve rates to mean something (with 100 steps a
// random walk over the valid moves solves ~93% of 4x4 one-tile puzzles).
const char* presets_json() {
  return R"json({
  "full": {"network": {"blocks": 30, "channels": 192}},
  "reduced": {"network": {"blocks": 20, "channels": 128}},
  "cartpole": {"env": "cartpole"},
  "puzzle4": {"env": "puzzle", "network": {"kind": "recursive", "hidden_dim": 64, "num_heads": 4, "num_recursive_steps": 2},
              "puzzle": {"size": 4, "tiles": 1, "max_moves": 10, "max_steps": 20},
              "total_timesteps": 300000, "num_envs": 16, "num_steps": 64, "num_minibatches": 4, "update_epochs": 4,
              "lr": 0.0005, "gamma": 0.97, "ent_coef": 0.01},
  "puzzle5": {"env": "puzzle", "network": {"kind": "recursive", "hidden_dim": 64, "num_heads": 4, "num_recursive_steps": 2},
              "puzzle": {"size": 5, "tiles": 1, "max_moves": 12, "max_steps": 24},
              "total_timesteps": 400000, "num_envs": 16, "num_steps": 64, "num_minibatches": 4, "update_epochs": 4,
              "lr": 0.0005, "gamma": 0.97, "ent_coef": 0.01}
})json";
}

std::string Config::network_kind() const {
  if (network.kind != "auto") return network.kind;
  return env == "cartpole" ? "mlp" : "recursive";
}

Config parse_config(const json& user) {
  if (!user.is_object()) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "ppo config: expected a JSON object");
  json cfg = json::parse(config_defaults_json());
  cfg.merge_patch(user);
  Config c;
  c.env = config_field<std::string>(cfg, "env", "env");
  config_check(c.env == "cartpole" || c.env == "puzzle", "env", "expected cartpole or puzzle, got '" + c.env + "'");
  const json& n = cfg.at("network");
  c.network.kind = config_field<std::string>(n, "kind", "network.kind");
  config_check(c.network.kind == "auto" || c.network.kind == "mlp" || c.network.kind == "recursive" ||
            c.network.kind == "resnet",
        "network.kind", "expected auto, mlp, recursive or resnet, got '" + c.network.kind + "'");
  c.network.mlp_hidden = config_field<std::vector<int64_t>>(n, "mlp_hidden", "network.mlp_hidden");
  for (int64_t h : c.network.mlp_hidden) config_check(h >= 1, "network.mlp_hidden", "widths must be >= 1");
  c.network.hidden_dim = config_field<int64_t>(n, "hidden_dim", "network.hidden_dim");
  c.network.num_heads = config_field<int64_t>(n, "num_heads", "network.num_heads");
  c.network.num_recursive_steps = config_field<int64_t>(n, "num_recursive_steps", "network.num_recursive_steps");
  c.network.blocks = config_field<int64_t>(n, "blocks", "network.blocks");
  c.network.channels = config_field<int64_t>(n, "channels", "network.channels");
  config_check(c.network.hidden_dim >= 1, "network.hidden_dim", "must be >= 1");
  config_check(c.network.num_heads >= 1 && c.network.hidden_dim % c.network.num_heads == 0, "network.num_heads",
        "must be >= 1 and divide network.hidden_dim (" + std::to_string(c.network.hidden_dim) + ")");
  config_check(c.network.num_recursive_steps >= 1, "network.num_recursive_steps", "must be >= 1");
  config_check(c.network.blocks >= 0, "network.blocks", "must be >= 0");
  config_check(c.network.channels >= 0, "network.channels", "must be >= 0");
  config_check(c.env == "puzzle" || c.network_kind() == "mlp", "network.kind",
        "cartpole's observation is a vector: use mlp (got '" + c.network_kind() + "')");

  c.total_timesteps = config_field<int64_t>(cfg, "total_timesteps", "total_timesteps");
  c.num_envs = config_field<int64_t>(cfg, "num_envs", "num_envs");
  c.num_steps = config_field<int64_t>(cfg, "num_steps", "num_steps");
  c.num_minibatches = config_field<int64_t>(cfg, "num_minibatches", "num_minibatches");
  c.update_epochs = config_field<int64_t>(cfg, "update_epochs", "update_epochs");
  config_check(c.num_envs >= 1, "num_envs", "must be >= 1");
  config_check(c.num_steps >= 1, "num_steps", "must be >= 1");
  config_check(c.num_minibatches >= 1 && c.batch_size() % c.num_minibatches == 0, "num_minibatches",
        "must divide num_envs x num_steps (" + std::to_string(c.batch_size()) + ")");
  config_check(c.update_epochs >= 1, "update_epochs", "must be >= 1");
  config_check(c.total_timesteps >= c.batch_size(), "total_timesteps",
        "must be at least one iteration, num_envs x num_steps (" + std::to_string(c.batch_size()) + ")");
  c.lr = config_field<double>(cfg, "lr", "lr");
  config_check(c.lr > 0, "lr", "must be > 0");
  c.anneal_lr = config_field<bool>(cfg, "anneal_lr", "anneal_lr");
  c.gamma = config_field<double>(cfg, "gamma", "gamma");
  config_check(c.gamma >= 0 && c.gamma <= 1, "gamma", "must be in [0, 1]");
  c.gae_lambda = config_field<double>(cfg, "gae_lambda", "gae_lambda");
  config_check(c.gae_lambda >= 0 && c.gae_lambda <= 1, "gae_lambda", "must be in [0, 1]");
  c.clip_coef = config_field<double>(cfg, "clip_coef", "clip_coef");
  config_check(c.clip_coef > 0, "clip_coef", "must be > 0");
  c.clip_vloss = config_field<bool>(cfg, "clip_vloss", "clip_vloss");
  c.ent_coef = config_field<double>(cfg, "ent_coef", "ent_coef");
  c.vf_coef = config_field<double>(cfg, "vf_coef", "vf_coef");
  c.max_grad_norm = config_field<double>(cfg, "max_grad_norm", "max_grad_norm");
  config_check(c.max_grad_norm > 0, "max_grad_norm", "must be > 0");
  c.norm_adv = config_field<bool>(cfg, "norm_adv", "norm_adv");
  if (cfg.contains("target_kl") && !cfg.at("target_kl").is_null()) {
    c.target_kl = config_field<double>(cfg, "target_kl", "target_kl");
    config_check(*c.target_kl > 0, "target_kl", "must be > 0 (or null)");
  }
  c.seed = config_field<uint64_t>(cfg, "seed", "seed");
  c.mask_invalid_moves = config_field<bool>(cfg, "mask_invalid_moves", "mask_invalid_moves");

  const json& p = cfg.at("puzzle");
  c.puzzle.size = config_field<int>(p, "size", "puzzle.size");
  config_check(c.puzzle.size >= 2 && c.puzzle.size <= 16, "puzzle.size", "must be in [2, 16]");
  c.puzzle.tiles = config_field<int>(p, "tiles", "puzzle.tiles");
  config_check(c.puzzle.tiles >= 1 && c.puzzle.tiles < c.puzzle.size * c.puzzle.size, "puzzle.tiles",
        "must be >= 1 and fewer than the cells");
  c.puzzle.blocked_density = config_field<double>(p, "blocked_density", "puzzle.blocked_density");
  config_check(c.puzzle.blocked_density >= 0 && c.puzzle.blocked_density <= 0.9, "puzzle.blocked_density",
        "must be in [0, 0.9]");
  c.puzzle.multi_color = config_field<bool>(p, "multi_color", "puzzle.multi_color");
  c.puzzle.max_steps = config_field<int>(p, "max_steps", "puzzle.max_steps");
  config_check(c.puzzle.max_steps >= 1, "puzzle.max_steps", "must be >= 1");
  c.puzzle.min_moves = config_field<int>(p, "min_moves", "puzzle.min_moves");
  c.puzzle.max_moves = config_field<int>(p, "max_moves", "puzzle.max_moves");
  config_check(c.puzzle.min_moves >= 1, "puzzle.min_moves", "must be >= 1");
  config_check(c.puzzle.max_moves >= c.puzzle.min_moves, "puzzle.max_moves", "must be >= puzzle.min_moves");
  const json& cu = p.at("curriculum");
  c.puzzle.curriculum.enabled = config_field<bool>(cu, "enabled", "puzzle.curriculum.enabled");
  c.puzzle.curriculum.promote_at = config_field<double>(cu, "promote_at", "puzzle.curriculum.promote_at");
  config_check(c.puzzle.curriculum.promote_at > 0 && c.puzzle.curriculum.promote_at <= 1, "puzzle.curriculum.promote_at",
        "must be in (0, 1]");
  c.puzzle.curriculum.window = config_field<int64_t>(cu, "window", "puzzle.curriculum.window");
  config_check(c.puzzle.curriculum.window >= 1, "puzzle.curriculum.window", "must be >= 1");
  c.puzzle.eval_count = config_field<int64_t>(p, "eval_count", "puzzle.eval_count");
  config_check(c.puzzle.eval_count >= 1, "puzzle.eval_count", "must be >= 1");
  c.puzzle.eval_seed = config_field<uint64_t>(p, "eval_seed", "puzzle.eval_seed");
  c.puzzle.eval_level_file = config_field<std::string>(p, "eval_level_file", "puzzle.eval_level_file");

  c.eval_episodes = config_field<int64_t>(cfg, "eval_episodes", "eval_episodes");
  config_check(c.eval_episodes >= 1, "eval_episodes", "must be >= 1");
  c.checkpoint_every = config_field<int64_t>(cfg, "checkpoint_every", "checkpoint_every");
  config_check(c.checkpoint_every >= 1, "checkpoint_every", "must be >= 1");
  c.keep_checkpoints = config_field<int>(cfg, "keep_checkpoints", "keep_checkpoints");
  config_check(c.keep_checkpoints >= 1, "keep_checkpoints", "must be >= 1");
  c.checkpoint = config_field<std::string>(cfg, "checkpoint", "checkpoint");
  config_check(c.checkpoint == "best" || c.checkpoint == "latest", "checkpoint", "expected best or latest");
  c.level_file = config_field<std::string>(cfg, "level_file", "level_file");
  c.play_index = config_field<int64_t>(cfg, "play_index", "play_index");
  config_check(c.play_index >= 0, "play_index", "must be >= 0");
  c.eval_deterministic = config_field<bool>(cfg, "eval_deterministic", "eval_deterministic");
  c.torch_threads = config_field<int>(cfg, "torch_threads", "torch_threads");
  config_check(c.torch_threads >= 0, "torch_threads", "must be >= 0");
  return c;
}

}  // namespace ppo
