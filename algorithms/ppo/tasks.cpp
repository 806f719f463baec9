#include "tasks.hpp"

#include <filesystem>

#include <mlh/plugin.hpp>

#include "env/cartpole.hpp"
#include "env/curriculum.hpp"
#include "env/level_file.hpp"
#include "env/puzzle_source.hpp"
#include "env/solver.hpp"

namespace ppo {

GeneratorSpec generator_spec(const Config& cfg) {
  GeneratorSpec g;
  g.size = cfg.puzzle.size;
  g.tiles = cfg.puzzle.tiles;
  g.blocked_density = cfg.puzzle.blocked_density;
  g.multi_color = cfg.puzzle.multi_color;
  g.min_moves = cfg.puzzle.min_moves;
  g.max_moves = cfg.puzzle.max_moves;
  try {
    validate(g);
  } catch (const std::invalid_argument& e) {
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, std::string("config field 'puzzle': ") + e.what());
  }
  return g;
}

PuzzleEnvOptions puzzle_env_options(const Config& cfg, int obs_size) {
  PuzzleEnvOptions o;
  o.obs_size = obs_size;
  o.max_steps = cfg.puzzle.max_steps;
  return o;
}

Task make_task(const Config& cfg) {
  Task t;
  if (cfg.env == "cartpole") {
    t.make_env = [] { return std::make_unique<CartPole>(); };
    t.observation_shape = {4};
    t.num_actions = 2;
    return t;
  }
  const GeneratorSpec g = generator_spec(cfg);
  const uint64_t seed = cfg.seed * 7919ULL + 101;
  std::shared_ptr<PuzzleSource> source;
  std::shared_ptr<Curriculum> curriculum;
  try {
    if (cfg.puzzle.curriculum.enabled) {
      CurriculumOptions o;
      o.start_level = std::min(2, g.max_moves);
      o.window = static_cast<int>(cfg.puzzle.curriculum.window);
      o.threshold = cfg.puzzle.curriculum.promote_at;
      o.seed = seed;
      curriculum = std::make_shared<Curriculum>(g, o);
      source = curriculum;
    } else {
      source = std::make_shared<GeneratorSource>(g, seed);
    }
  } catch (const std::exception& e) {
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, std::string("config field 'puzzle': ") + e.what());
  }
  const PuzzleEnvOptions options = puzzle_env_options(cfg, cfg.puzzle.size);
  t.make_env = [source, options] { return std::make_unique<PuzzleEnv>(source, options); };
  t.observation_shape = {PuzzleEnv::kNumPlanes, options.obs_size, options.obs_size};
  t.num_actions = kNumMoves;
  if (curriculum) {
    t.metrics = [curriculum] {
      return std::map<std::string, double>{{"curriculum/level", curriculum->level()},
                                           {"curriculum/window_solve_rate", curriculum->solve_rate()}};
    };
  }
  return t;
}

std::vector<Puzzle> load_level_file(const std::string& path) {
  if (path.empty()) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "no level file given (config field 'level_file')");
  if (!std::filesystem::exists(path)) throw mlh::Error(MLH_ERR_IO, "level file '" + path + "' does not exist");
  try {
    std::vector<Puzzle> p = load_levels(path);
    if (p.empty()) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "level file '" + path + "' holds no puzzle");
    return p;
  } catch (const LevelError& e) {
    throw mlh::Error(e.line() == 0 ? MLH_ERR_IO : MLH_ERR_INVALID_ARGUMENT,
                     std::string("level file '") + path + "': " + e.what());
  } catch (const std::invalid_argument& e) {
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, std::string("level file '") + path + "': " + e.what());
  }
}

std::vector<Puzzle> eval_puzzles(const Config& cfg) {
  if (!cfg.puzzle.eval_level_file.empty()) {
    std::vector<Puzzle> p = load_level_file(cfg.puzzle.eval_level_file);
    for (Puzzle& q : p)
      if (q.optimal < 0) {
        const SolveResult r = solve(q, SolveOptions{2'000'000, false});
        q.optimal = r.solved() ? r.moves : -1;
      }
    return p;
  }
  const GeneratorSpec g = generator_spec(cfg);
  std::mt19937_64 rng(cfg.puzzle.eval_seed);
  std::vector<Puzzle> out;
  for (int64_t i = 0; i < cfg.puzzle.eval_count; ++i) out.push_back(generate_puzzle(g, rng));
  return out;
}

}  // namespace ppo
