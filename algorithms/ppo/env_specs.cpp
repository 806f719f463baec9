#include "env_specs.hpp"

#include <stdexcept>
#include <string>

#include <mlh/plugin.hpp>

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

}  // namespace ppo
