// The structs below PPO's config (the generator's spec, the puzzle environment's options) take
// their config-derived values from the config table alone: they declare no defaults of their
// own, and generator_spec / puzzle_env_options (env_specs.hpp) give them the table's.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "config.hpp"
#include "env/puzzle.hpp"
#include "env_specs.hpp"
#include "no_default.hpp"

namespace {

using nlohmann::json;

json table_defaults() { return json::parse(ppo::config_defaults_json()); }

// The structured binding names every member, so a member added to GeneratorSpec stops this
// from compiling until it is sorted here: config-derived (no default) or the generator's own.
TEST(PpoSpecStructs, GeneratorSpecDeclaresNoConfigDefault) {
  [[maybe_unused]] const auto [size, tiles, blocked_density, multi_color, min_moves, max_moves, max_attempts,
                               max_states] = ppo::GeneratorSpec{};
  EXPECT_NO_DEFAULT(size);
  EXPECT_NO_DEFAULT(tiles);
  EXPECT_NO_DEFAULT(blocked_density);
  EXPECT_NO_DEFAULT(multi_color);
  EXPECT_NO_DEFAULT(min_moves);
  EXPECT_NO_DEFAULT(max_moves);
  // max_attempts and max_states are the generator's own limits, in no config: they keep theirs.
}

TEST(PpoSpecStructs, PuzzleEnvOptionsDeclareNoConfigDefault) {
  [[maybe_unused]] const auto [obs_size, max_steps, step_reward, solve_reward, fail_reward] = ppo::PuzzleEnvOptions{};
  EXPECT_NO_DEFAULT(obs_size);
  EXPECT_NO_DEFAULT(max_steps);
  // The rewards are the environment's own, in no config: they keep theirs.
}

TEST(PpoSpecStructs, GeneratorSpecFromTheConfigHoldsTheTablesDefaults) {
  const json d = table_defaults()["puzzle"];
  const ppo::GeneratorSpec g = ppo::generator_spec(ppo::parse_config(json::object()));
  EXPECT_EQ(g.size, d["size"].get<int>());
  EXPECT_EQ(g.tiles, d["tiles"].get<int>());
  EXPECT_EQ(g.blocked_density, d["blocked_density"].get<double>());
  EXPECT_EQ(g.multi_color, d["multi_color"].get<bool>());
  EXPECT_EQ(g.min_moves, d["min_moves"].get<int>());
  EXPECT_EQ(g.max_moves, d["max_moves"].get<int>());
}

TEST(PpoSpecStructs, PuzzleEnvOptionsFromTheConfigHoldTheTablesDefaults) {
  const json d = table_defaults()["puzzle"];
  const ppo::PuzzleEnvOptions o = ppo::puzzle_env_options(ppo::parse_config(json::object()), 6);
  EXPECT_EQ(o.obs_size, 6);  // the network's board size, which the caller gives
  EXPECT_EQ(o.max_steps, d["max_steps"].get<int>());
}

// The config table bounds puzzle.size, puzzle.tiles and puzzle.blocked_density by the puzzle's
// own constants (env/puzzle.hpp), which the generator enforces, not by literals of its own:
// were one restated as a number, a change to the constant would leave the table behind and this
// would fail. A config the table accepts is one the generator accepts, at the table's extremes.
TEST(PpoSpecStructs, TheConfigTablesPuzzleBoundsAreTheGenerators) {
  const json puzzle = json::parse(ppo::config_schema_json())["properties"]["puzzle"]["properties"];
  EXPECT_EQ(puzzle["size"]["minimum"], ppo::kMinPuzzleSize);
  EXPECT_EQ(puzzle["size"]["maximum"], ppo::kMaxPuzzleSize);
  EXPECT_EQ(puzzle["tiles"]["maximum"], ppo::kMaxTiles);
  EXPECT_EQ(puzzle["blocked_density"]["maximum"], ppo::kMaxBlockedDensity);
  for (const int size : {ppo::kMinPuzzleSize, ppo::kMaxPuzzleSize})
    EXPECT_NO_THROW(ppo::generator_spec(ppo::parse_config({{"puzzle", {{"size", size}}}}))) << size;
  EXPECT_NO_THROW(ppo::generator_spec(
      ppo::parse_config({{"puzzle", {{"size", ppo::kMaxPuzzleSize}, {"tiles", ppo::kMaxTiles},
                                     {"blocked_density", ppo::kMaxBlockedDensity}}}})));
}

}  // namespace
