// Random solvable puzzles with known optimal lengths. An attempt blocks each cell with
// probability blocked_density, drops the tiles on random free cells, enumerates every
// configuration reachable within max_moves (BFS), picks a distance d in [min_moves,
// max_moves] uniformly among those present and a configuration at distance d uniformly, and
// makes its cells the targets; the optimal length is then exactly d, which solve() confirms.
// Attempts that find no such configuration are retried. Deterministic given the rng state
// (only rng() is used, no std distributions, so it is the same across standard libraries).
#pragma once

#include <cstdint>
#include <random>

#include <mlh/uniform_index.hpp>

#include "puzzle.hpp"

namespace ppo {

// The first six fields are PPO's puzzle.* config fields and have no defaults here: the config
// table holds them, and generator_spec(const Config&) (env_specs.hpp) is the one place a spec
// gets them (a default here once said size 5 where the table says 4). The last two are the
// generator's own limits, in no config.
struct GeneratorSpec {
  int size;
  int tiles;
  double blocked_density;  // in [0, kMaxBlockedDensity]
  bool multi_color;
  int min_moves;
  int max_moves;
  int max_attempts = 1000;          // before generate_puzzle throws
  int64_t max_states = 200'000;     // per attempt's BFS
};

// Throws std::invalid_argument naming the bad field. PPO's config table declares the same
// bounds from the same constants (puzzle.hpp), so a config it accepts is one this accepts.
void validate(const GeneratorSpec& spec);
// Throws std::runtime_error when max_attempts attempts found nothing.
Puzzle generate_puzzle(const GeneratorSpec& spec, std::mt19937_64& rng);

// Uniform integer in [0, n) and uniform double in [0, 1) from rng() alone.
using mlh::uniform_index;
double uniform_unit(std::mt19937_64& rng);

}  // namespace ppo
