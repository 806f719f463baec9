#include "config.hpp"

#include <mlh/config_fields.hpp>
#include <mlh/config_table.hpp>
#include <mlh/plugin.hpp>

#include "env/puzzle.hpp"

namespace ppo {

using nlohmann::json;
using mlh::config_check;

std::string tower_text(const ResnetTower& tower) {
  return std::to_string(tower.blocks) + " x " + std::to_string(tower.channels);
}

const mlh::ConfigTable<Config>& config_table() {
  static const auto table =
      mlh::ConfigTable<Config>(MLH_PLUGIN_NAME)  // the plugin's name (CMakeLists.txt)
          .host_field("preset", "string",
                      "a preset of this algorithm (cartpole, pendulum, puzzle4, puzzle5, full, reduced)")
          .field("env", MLH_MEMBER(env), "cartpole",
                 mlh::one_of({"cartpole", "pendulum", "mountain-car-continuous", "puzzle", "library", "gymnasium"}),
                 "the environment: CartPole-v1, Pendulum-v1 and MountainCarContinuous-v0 (continuous actions), "
                 "tiler-slider puzzles (generated, or yours: puzzle.train_levels), your own environment's "
                 "shared library (library.path), or a Gymnasium environment in Python (gymnasium.id)")
          .field("library.path", MLH_MEMBER(library.path), "", mlh::path(),
                 "env=library: the environment's shared library (.so), written with mlh/rl_env.hpp "
                 "(docs/plugin-guide.md, Writing an environment)")
          .field("library.settings", MLH_MEMBER(library.settings), json::object(), mlh::any_value(),
                 "env=library: the environment's own settings, a JSON object passed to it as it is")
          .field("gymnasium.id", MLH_MEMBER(gymnasium.id), "", mlh::any_value(),
                 "env=gymnasium: a registered Gymnasium id (CartPole-v1, Pendulum-v1, ...) or module:Class of "
                 "your own environment (its folder in gymnasium.pythonpath)")
          .field("gymnasium.kwargs", MLH_MEMBER(gymnasium.kwargs), json::object(), mlh::any_value(),
                 "env=gymnasium: keyword arguments of gymnasium.make (or of your class), a JSON object")
          .field("gymnasium.wrappers", MLH_MEMBER(gymnasium.wrappers), json::array(), mlh::any_value(),
                 "env=gymnasium: wrappers applied in order, each {\"name\": a class of gymnasium.wrappers or "
                 "module:Class, then its keyword arguments}")
          .field("gymnasium.pythonpath", MLH_MEMBER(gymnasium.pythonpath), json::array(), mlh::path().or_one_string(),
                 "env=gymnasium: folders put first on the workers' sys.path (where your module is; one folder or a list)")
          .field("gymnasium.python", MLH_MEMBER(gymnasium.python), "", mlh::path(),
                 "env=gymnasium: the Python interpreter that runs the environments, with gymnasium installed "
                 "(empty: python3 on PATH)")
          .field("network.kind", MLH_MEMBER(network.kind), "auto",
                 mlh::one_of({"auto", "mlp", "recursive", "resnet", "python"}),
                 "the policy and value network; auto: mlp for cartpole and flat observations, recursive for "
                 "puzzles and {planes, height, width} observations; mlp takes flat observations, recursive and "
                 "resnet planes (docs/ppo.md, The networks); python: your torch.nn.Module (network.module)")
          .field("network.module", MLH_MEMBER(network.module), "", mlh::path(),
                 "network.kind=python: path/to/file.py:ClassName, built with observation_shape, num_actions and "
                 "network.kwargs; it takes observations [batch, ...] and returns (logits or action means [batch, "
                 "num_actions], values [batch]) (docs/your-network-in-pytorch.md)")
          .field("network.kwargs", MLH_MEMBER(network.kwargs), json::object(), mlh::any_value(),
                 "network.kind=python: more keyword arguments of your class, a JSON object")
          .field("network.mlp_hidden", MLH_MEMBER(network.mlp_hidden), {64, 64},
                 mlh::FieldRule().items_at_least(1).unit("units per layer"), "mlp: the hidden layers' widths")
          .field("network.hidden_dim", MLH_MEMBER(network.hidden_dim), 256, mlh::at_least(1).unit("units"),
                 "recursive: the attention blocks' width (a multiple of num_heads)")
          .field("network.num_heads", MLH_MEMBER(network.num_heads), 4, mlh::at_least(1).unit("heads"),
                 "recursive: attention heads (must divide hidden_dim)")
          .field("network.num_recursive_steps", MLH_MEMBER(network.num_recursive_steps), 3, mlh::at_least(1).unit("steps"),
                 "recursive: how often the shared block is applied")
          .field("network.blocks", MLH_MEMBER(network.blocks), 0, mlh::at_least(0).unit("blocks"),
                 "resnet: residual blocks; 0 = from the plan's preset (full " + std::to_string(kFullTower.blocks) +
                     ", else " + std::to_string(kReducedTower.blocks) + ")")
          .field("network.channels", MLH_MEMBER(network.channels), 0, mlh::at_least(0).unit("channels"),
                 "resnet: channels per block; 0 = from the plan's preset (full " +
                     std::to_string(kFullTower.channels) + ", else " + std::to_string(kReducedTower.channels) + ")")
          .field("total_timesteps", MLH_MEMBER(total_timesteps), 500000,
                 mlh::at_least(1).unit("env steps").speed_neutral(),
                 "environment steps to train for, over all envs (at least one iteration)")
          .field("num_envs", MLH_MEMBER(num_envs), 4, mlh::at_least(1).unit("envs"),
                 "environments stepped side by side")
          .field("num_steps", MLH_MEMBER(num_steps), 128, mlh::at_least(1).unit("steps"),
                 "steps per env per iteration; PPO's batch is num_envs x num_steps")
          .field("num_minibatches", MLH_MEMBER(num_minibatches), 4, mlh::at_least(1).unit("minibatches"),
                 "minibatches an iteration's batch is split into (must divide num_envs x num_steps)")
          .field("update_epochs", MLH_MEMBER(update_epochs), 4, mlh::at_least(1).unit("epochs"),
                 "passes over an iteration's batch per update")
          .field("lr", MLH_MEMBER(lr), 0.00025, mlh::above(0).max(1).speed_neutral(), "Adam's learning rate")
          .field("anneal_lr", MLH_MEMBER(anneal_lr), true, mlh::speed_neutral(),
                 "lower the learning rate linearly to 0 over the run")
          .field("gamma", MLH_MEMBER(gamma), 0.99, mlh::between(0, 1).speed_neutral(), "the discount factor")
          .field("gae_lambda", MLH_MEMBER(gae_lambda), 0.95, mlh::between(0, 1).speed_neutral(),
                 "the lambda of generalized advantage estimation")
          .field("clip_coef", MLH_MEMBER(clip_coef), 0.2, mlh::above(0).speed_neutral(),
                 "the surrogate objective's clipping range (policy ratio within 1 +- clip_coef)")
          .field("clip_vloss", MLH_MEMBER(clip_vloss), true, mlh::any_value(),
                 "clip the value loss as the policy's (CleanRL's clip_vloss)")
          .field("ent_coef", MLH_MEMBER(ent_coef), 0.01, mlh::at_least(0).speed_neutral(),
                 "the entropy bonus's weight in the loss")
          .field("vf_coef", MLH_MEMBER(vf_coef), 0.5, mlh::at_least(0).speed_neutral(),
                 "the value loss's weight in the loss")
          .field("max_grad_norm", MLH_MEMBER(max_grad_norm), 0.5, mlh::above(0).speed_neutral(),
                 "gradients are clipped to this global norm")
          .field("norm_adv", MLH_MEMBER(norm_adv), true, mlh::speed_neutral(),
                 "normalize the advantages within each minibatch")
          .field("normalize_observations", MLH_MEMBER(normalize_observations), false, mlh::speed_neutral(),
                 "feed the network observations normalized by their running mean and variance, clipped to "
                 "+-10 (the statistics are saved with the weights and used by eval, forward and export)")
          .field("normalize_rewards", MLH_MEMBER(normalize_rewards), false, mlh::speed_neutral(),
                 "train on rewards divided by the running standard deviation of the discounted return, "
                 "clipped to +-10 (returns reported stay the environment's)")
          .field("target_kl", MLH_MEMBER(target_kl), nullptr, mlh::above(0),
                 "stop an update's epochs once approx_kl exceeds it (null: off)")
          .field("seed", MLH_MEMBER(seed), 1, mlh::at_least(0).speed_neutral(),
                 "seeds the environments, the weights and the sampling")
          .field("mask_invalid_moves", MLH_MEMBER(mask_invalid_moves), true, mlh::any_value(),
                 "puzzles: give moves that change nothing probability 0")
          .field("puzzle.size", MLH_MEMBER(puzzle.size), 4, mlh::between(kMinPuzzleSize, kMaxPuzzleSize).unit("cells per side"),
                 "the board's side")
          .field("puzzle.tiles", MLH_MEMBER(puzzle.tiles), 1, mlh::between(1, kMaxTiles).unit("tiles"),
                 "tiles that slide (at most half the cells)")
          .field("puzzle.blocked_density", MLH_MEMBER(puzzle.blocked_density), 0.15, mlh::between(0, kMaxBlockedDensity),
                 "the share of cells that are walls")
          .field("puzzle.multi_color", MLH_MEMBER(puzzle.multi_color), false, mlh::any_value(),
                 "each tile has its own target (else any tile may fill any target)")
          .field("puzzle.max_steps", MLH_MEMBER(puzzle.max_steps), 100, mlh::at_least(1).unit("moves"),
                 "step limit of an episode (failure, reward -5)")
          .field("puzzle.min_moves", MLH_MEMBER(puzzle.min_moves), 1, mlh::at_least(1).unit("moves"),
                 "shortest optimal solution of generated puzzles")
          .field("puzzle.max_moves", MLH_MEMBER(puzzle.max_moves), 8, mlh::at_least(1).unit("moves"),
                 "longest optimal solution of generated puzzles (at least min_moves)")
          .field("puzzle.curriculum.enabled", MLH_MEMBER(puzzle.curriculum.enabled), true, mlh::any_value(),
                 "start with short puzzles and add longer ones as the agent solves them")
          .field("puzzle.curriculum.promote_at", MLH_MEMBER(puzzle.curriculum.promote_at), 0.8,
                 mlh::above(0).max(1).speed_neutral(),
                 "the solve rate over the recent episodes that adds harder puzzles")
          .field("puzzle.curriculum.window", MLH_MEMBER(puzzle.curriculum.window), 200,
                 mlh::at_least(1).unit("episodes").speed_neutral(),
                 "episodes the solve rate is measured over")
          .field("puzzle.train_levels", MLH_MEMBER(puzzle.train_levels), "", mlh::path(),
                 "train on your puzzles: a level file, or a folder of them (its *.txt and *.lvl files); "
                 "each is solved and checked before training")
          .field("puzzle.train_levels_share", MLH_MEMBER(puzzle.train_levels_share), 1.0,
                 mlh::above(0).max(1),
                 "the share of training episodes played on puzzle.train_levels; the rest are generated "
                 "(1: your levels alone)")
          .field("puzzle.eval_count", MLH_MEMBER(puzzle.eval_count), 200,
                 mlh::at_least(1).unit("puzzles").speed_neutral(),
                 "held-out generated puzzles for eval")
          .field("puzzle.eval_seed", MLH_MEMBER(puzzle.eval_seed), 1000003, mlh::at_least(0).speed_neutral(),
                 "the held-out puzzles' generator seed (distinct from training's)")
          .field("puzzle.eval_level_file", MLH_MEMBER(puzzle.eval_level_file), "", mlh::path().speed_neutral(),
                 "eval on this level file instead of generated puzzles (checked before training, if it exists by then)")
          .field("eval_episodes", MLH_MEMBER(eval_episodes), 100, mlh::at_least(1).unit("episodes").speed_neutral(),
                 "cartpole and env=library: episodes eval averages the return over (puzzles: puzzle.eval_count)")
          .field("checkpoint_every", MLH_MEMBER(checkpoint_every), 50,
                 mlh::at_least(1).unit("iterations").speed_neutral(),
                 "a checkpoint after every this many iterations")
          .field("keep_checkpoints", MLH_MEMBER(keep_checkpoints), 3,
                 mlh::at_least(1).unit("checkpoints").speed_neutral(),
                 "the newest checkpoints kept on disk (the best one is kept besides)")
          .field("checkpoint", MLH_MEMBER(checkpoint), "best", mlh::one_of({"best", "latest"}).speed_neutral(),
                 "eval/play/forward/export: the checkpoint with the best return, or the newest")
          .field("forward.inputs", MLH_MEMBER(forward_inputs), "", mlh::path().speed_neutral(),
                 "forward: a safetensors file whose tensor 'observations' (float, batch x the observation shape) "
                 "the network runs on; logits and values go to the command folder's outputs.safetensors")
          .field("level_file", MLH_MEMBER(level_file), "", mlh::path().speed_neutral(),
                 "play: the level file (checked before training, if it exists by then)")
          .field("play_index", MLH_MEMBER(play_index), 0, mlh::at_least(0).speed_neutral(),
                 "play: the level's index in the file")
          .field("eval_deterministic", MLH_MEMBER(eval_deterministic), true, mlh::speed_neutral(),
                 "eval/play: take the most probable action (else sample it)")
          .retired_field("torch_threads", 0, "the plan sets the threads: --threads N, or intra_op_threads in the "
                                             "hardware settings file");
  return table;
}

const char* config_schema_json() { return config_table().schema_text().c_str(); }
const char* config_defaults_json() { return config_table().defaults_text().c_str(); }

// full/reduced are the plan's model-size presets (they size the residual tower: the MLP and
// the recursive net are the tasks' own size in both); cartpole, pendulum,
// puzzle4 and puzzle5 are task presets (--set preset=puzzle4). pendulum is rl-baselines3-zoo's
// PPO setting for Pendulum-v1 (without its state-dependent exploration). The puzzle presets use a
// step limit of twice the longest optimal length (instead of the default 100) so that a
// random policy fails often enough for solve rates to mean something (with 100 steps a
// random walk over the valid moves solves ~93% of 4x4 one-tile puzzles).
namespace {

const char* task_presets_json() {
  return R"json({
  "cartpole": {"env": "cartpole"},
  "pendulum": {"env": "pendulum", "total_timesteps": 300000, "num_envs": 4, "num_steps": 1024, "num_minibatches": 64,
               "update_epochs": 10, "lr": 0.001, "gamma": 0.9, "gae_lambda": 0.95, "ent_coef": 0.0,
               "normalize_observations": true, "normalize_rewards": true},
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

}  // namespace

const char* presets_json() {
  static const std::string text = [] {
    json presets = json::parse(task_presets_json());
    for (const auto& [name, tower] : {std::pair{"full", kFullTower}, std::pair{"reduced", kReducedTower}})
      presets[name] = {{"network", {{"blocks", tower.blocks}, {"channels", tower.channels}}}};
    return presets.dump();
  }();
  return text.c_str();
}

std::string Config::network_kind() const {
  if (network.kind != "auto" || env == "library" || env == "gymnasium") return network.kind;
  return env == "puzzle" ? "recursive" : "mlp";
}

// The rules between fields; each field's own bounds are the table's.
Config parse_config(const json& user) {
  Config c = config_table().parse(user);
  config_check(c.network.hidden_dim % c.network.num_heads == 0, "network.num_heads",
               "must divide network.hidden_dim (" + std::to_string(c.network.hidden_dim) + ")");
  // Which network fits which environment: docs/ppo.md's table says the same.
  config_check(c.network.kind != "python" || !c.network.module.empty(), "network.module",
               "network.kind=python needs your module: path/to/file.py:ClassName (docs/your-network-in-pytorch.md)");
  config_check(c.network.kind == "python" || c.network.module.empty(), "network.module",
               "names a Python network: set network.kind=python too (network.kind is '" + c.network.kind + "')");
  config_check(c.network.kwargs.is_object(), "network.kwargs",
               c.network.kwargs.dump() + " is not a JSON object of keyword arguments");
  config_check(c.env == "puzzle" || c.env == "library" || c.env == "gymnasium" || c.network_kind() == "mlp" ||
                   c.network_kind() == "python",
               "network.kind",
               c.env + "'s observation is a vector of numbers: use mlp (got '" + c.network_kind() +
                   "'; docs/ppo.md, The networks)");
  config_check(c.env != "puzzle" || c.network_kind() != "mlp", "network.kind",
               "a puzzle's observation is 8 planes of N x N cells, which mlp (CartPole's network, for a vector) "
               "cannot take: use recursive (the default for puzzles) or resnet (docs/ppo.md, The networks)");
  config_check(c.env == "puzzle" || c.puzzle.train_levels.empty(), "puzzle.train_levels",
               "levels are puzzles: set env=puzzle (or a puzzle preset) to train on them");
  config_check(c.puzzle.train_levels_share == 1.0 || !c.puzzle.train_levels.empty(), "puzzle.train_levels_share",
               "mixes puzzle.train_levels with generated puzzles: name your levels in puzzle.train_levels too");
  config_check(c.env != "library" || !c.library.path.empty(), "library.path",
               "env=library needs the environment's shared library: set library.path to its .so file");
  config_check(c.env == "library" || c.library.path.empty(), "library.path",
               "names an environment library: set env=library too (env is '" + c.env + "')");
  config_check(c.env != "gymnasium" || !c.gymnasium.id.empty(), "gymnasium.id",
               "env=gymnasium needs the environment: a registered id such as Pendulum-v1, or module:Class");
  config_check(c.env == "gymnasium" || c.gymnasium.id.empty(), "gymnasium.id",
               "names a Gymnasium environment: set env=gymnasium too (env is '" + c.env + "')");
  config_check(c.gymnasium.kwargs.is_object(), "gymnasium.kwargs",
               "must be a JSON object of keyword arguments (got " + c.gymnasium.kwargs.dump() + ")");
  for (const json& w : c.gymnasium.wrappers)
    config_check(w.is_object() && w.contains("name") && w["name"].is_string(), "gymnasium.wrappers",
                 "each wrapper is an object with its \"name\" and keyword arguments, such as "
                 "{\"name\": \"TimeLimit\", \"max_episode_steps\": 100} (got " + w.dump() + ")");
  config_check(c.library.settings.is_object(), "library.settings",
               "must be a JSON object of the environment's own settings (got " + c.library.settings.dump() + ")");
  config_check(c.batch_size() % c.num_minibatches == 0, "num_minibatches",
               "must divide num_envs x num_steps (" + std::to_string(c.batch_size()) + ")");
  config_check(c.total_timesteps >= c.batch_size(), "total_timesteps",
               "must be at least one iteration, num_envs x num_steps (" + std::to_string(c.batch_size()) + ")");
  config_check(c.puzzle.tiles <= c.puzzle.size * c.puzzle.size / 2, "puzzle.tiles",
               "must be at most half the cells (" + std::to_string(c.puzzle.size * c.puzzle.size / 2) + ")");
  config_check(c.puzzle.max_moves >= c.puzzle.min_moves, "puzzle.max_moves", "must be >= puzzle.min_moves");
  return c;
}

}  // namespace ppo
