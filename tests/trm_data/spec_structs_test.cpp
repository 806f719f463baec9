// The structs below TRM's config (the dataset builders' options, text sampling's) take their
// config-derived values from the config table alone: they declare no defaults of their own,
// and config_specs.hpp's functions give them the table's.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "config.hpp"
#include "config_specs.hpp"
#include "no_default.hpp"

namespace {

using nlohmann::json;

json table_defaults() { return json::parse(trm::config_defaults_json()); }

// Each structured binding names every member, so a member added to one of these structs stops
// this from compiling until it is sorted here (they are all config-derived today).
TEST(TrmSpecStructs, BuildAndSamplingOptionsDeclareNoDefault) {
  {
    [[maybe_unused]] const auto [train_puzzles, test_puzzles, min_givens, max_givens, augmentations, seed] =
        trm::SudokuBuildOptions{};
    EXPECT_NO_DEFAULT(train_puzzles);
    EXPECT_NO_DEFAULT(test_puzzles);
    EXPECT_NO_DEFAULT(min_givens);
    EXPECT_NO_DEFAULT(max_givens);
    EXPECT_NO_DEFAULT(augmentations);
    EXPECT_NO_DEFAULT(seed);
  }
  {
    [[maybe_unused]] const auto [train_mazes, test_mazes, size, augmentations, seed] = trm::MazeBuildOptions{};
    EXPECT_NO_DEFAULT(train_mazes);
    EXPECT_NO_DEFAULT(test_mazes);
    EXPECT_NO_DEFAULT(size);
    EXPECT_NO_DEFAULT(augmentations);
    EXPECT_NO_DEFAULT(seed);
  }
  {
    [[maybe_unused]] const auto [temperature, top_k, top_p] = trm::SamplingOptions{};
    EXPECT_NO_DEFAULT(temperature);
    EXPECT_NO_DEFAULT(top_k);
    EXPECT_NO_DEFAULT(top_p);
  }
}

TEST(TrmSpecStructs, OptionsFromTheConfigHoldTheTablesDefaults) {
  const json d = table_defaults();
  const trm::Config cfg = trm::parse_config(json::object());
  const json& b = d["build"];
  const trm::SudokuBuildOptions s = trm::sudoku_build_options(cfg);
  EXPECT_EQ(s.train_puzzles, b["train"].get<int64_t>());
  EXPECT_EQ(s.test_puzzles, b["test"].get<int64_t>());
  EXPECT_EQ(s.min_givens, b["min_givens"].get<int>());
  EXPECT_EQ(s.max_givens, b["max_givens"].get<int>());
  EXPECT_EQ(s.augmentations, b["augmentations"].get<int64_t>());
  EXPECT_EQ(s.seed, b["seed"].get<uint64_t>());
  const trm::MazeBuildOptions m = trm::maze_build_options(cfg);
  EXPECT_EQ(m.train_mazes, b["train"].get<int64_t>());
  EXPECT_EQ(m.test_mazes, b["test"].get<int64_t>());
  EXPECT_EQ(m.size, b["maze_size"].get<int>());
  EXPECT_EQ(m.augmentations, b["augmentations"].get<int64_t>());
  EXPECT_EQ(m.seed, b["seed"].get<uint64_t>());
  const json& g = d["generate"];
  const trm::SamplingOptions o = trm::sampling_options(cfg);
  EXPECT_EQ(o.temperature, g["temperature"].get<double>());
  EXPECT_EQ(o.top_k, g["top_k"].get<int64_t>());
  EXPECT_EQ(o.top_p, g["top_p"].get<double>());
}

}  // namespace
