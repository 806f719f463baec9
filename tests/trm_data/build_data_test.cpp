// build-data: small Sudoku and maze datasets in the reference's layout (with mlhost's token
// names), reopened and checked; bad options are refused naming the option.
#include <gtest/gtest.h>

#include <set>

#include "config.hpp"
#include "config_specs.hpp"
#include "data/build_data.hpp"
#include "data/dataset.hpp"
#include "data/maze.hpp"
#include "data/sampler.hpp"
#include "data/sudoku.hpp"
#include "data/token_names.hpp"
#include "fixtures.hpp"

namespace {

using namespace trm;

// The options as build-data makes them: TRM's config table's defaults with these build.*
// fields over them (a test never invents the fields it does not care about).
SudokuBuildOptions sudoku_options(const nlohmann::json& build = nlohmann::json::object()) {
  return sudoku_build_options(parse_config({{"build", build}}));
}
MazeBuildOptions maze_options(const nlohmann::json& build = nlohmann::json::object()) {
  return maze_build_options(parse_config({{"build", build}}));
}

std::vector<std::array<uint8_t, 81>> rows81(const NpyArray& a) {
  std::vector<std::array<uint8_t, 81>> out(static_cast<size_t>(a.shape()[0]));
  std::vector<int32_t> buf(81);
  for (size_t i = 0; i < out.size(); ++i) {
    a.copy_int32(static_cast<int64_t>(i) * 81, 81, buf.data());
    for (int k = 0; k < 81; ++k) out[i][static_cast<size_t>(k)] = static_cast<uint8_t>(buf[static_cast<size_t>(k)]);
  }
  return out;
}

void check_reference_metadata(const DatasetSplit& d, int64_t vocab, int64_t seq_len, int64_t groups, int64_t examples) {
  const DatasetMetadata& m = d.metadata();
  EXPECT_EQ(m.pad_id, 0);
  ASSERT_TRUE(m.ignore_label_id.has_value());
  EXPECT_EQ(*m.ignore_label_id, 0);
  EXPECT_EQ(m.blank_identifier_id, 0);
  EXPECT_EQ(m.num_puzzle_identifiers, 1);
  EXPECT_EQ(m.vocab_size, vocab);
  EXPECT_EQ(m.seq_len, seq_len);
  EXPECT_EQ(m.total_groups, groups);
  EXPECT_EQ(m.total_puzzles, groups);
  EXPECT_EQ(m.mean_puzzle_examples, 1.0);
  EXPECT_EQ(m.sets, std::vector<std::string>{"all"});
  EXPECT_EQ(d.num_groups(), groups);
  EXPECT_EQ(d.num_examples(), examples);
  EXPECT_EQ(d.num_puzzles(), examples);  // one example per puzzle
  const DatasetSet& s = d.sets()[0];
  EXPECT_EQ(s.inputs.dtype(), DType::kUInt8);
  EXPECT_EQ(s.puzzle_indices.dtype(), DType::kInt32);
  for (int64_t i = 0; i < s.puzzle_identifiers.size(); ++i) EXPECT_EQ(s.puzzle_identifiers.as_int64(i), 0);
  for (int64_t i = 0; i < s.puzzle_indices.size(); ++i) EXPECT_EQ(s.puzzle_indices.as_int64(i), i);
  EXPECT_TRUE(d.warnings().empty());
}

TEST(BuildData, SudokuDatasetInTheReferenceLayout) {
  TempDir dir;
  const SudokuBuildOptions o = sudoku_options(
      {{"train", 40}, {"test", 15}, {"min_givens", 40}, {"max_givens", 60}, {"augmentations", 2}, {"seed", 9}});
  std::vector<std::string> logs;
  const BuildReport r = build_sudoku_dataset(dir.path(), o, [&](const std::string& s) { logs.push_back(s); });
  EXPECT_EQ(r.train_examples, 120);
  EXPECT_EQ(r.test_examples, 15);
  EXPECT_GE(r.seconds, 0.0);
  EXPECT_FALSE(logs.empty());
  EXPECT_EQ(trm_test::read_bytes(dir / "identifiers.json"), "[\"<blank>\"]\n");
  const DatasetSplit train = DatasetSplit::open(dir / "train"), test = DatasetSplit::open(dir / "test");
  check_reference_metadata(train, 11, 81, 40, 120);
  check_reference_metadata(test, 11, 81, 15, 15);
  // mlhost's one addition: the tokens' names, as solve prints them.
  EXPECT_EQ(train.metadata().token_names, sudoku_token_names());
  EXPECT_EQ(test.metadata().token_names, sudoku_token_names());
  const auto& gi = train.sets()[0].group_indices;
  for (int64_t g = 0; g <= 40; ++g) EXPECT_EQ(gi.as_int64(g), 3 * g);  // original + 2 variants

  std::set<std::array<uint8_t, 81>> train_puzzles;
  const auto tin = rows81(train.sets()[0].inputs), tlab = rows81(train.sets()[0].labels);
  for (size_t i = 0; i < tin.size(); ++i) {
    const SudokuGrid p = from_tokens(tin[i]), s = from_tokens(tlab[i]);
    EXPECT_TRUE(is_valid_solution(s));
    EXPECT_TRUE(consistent(p, s));
    const int givens = count_givens(p);
    EXPECT_GE(givens, 40);
    EXPECT_LE(givens, 60);
    if (i % 3 == 0) train_puzzles.insert(tin[i]);
  }
  const auto in = rows81(test.sets()[0].inputs), lab = rows81(test.sets()[0].labels);
  for (size_t i = 0; i < in.size(); ++i) {
    const SudokuGrid p = from_tokens(in[i]);
    SudokuGrid s = p;
    EXPECT_EQ(count_solutions(p, 2), 1);
    ASSERT_TRUE(solve(s));
    EXPECT_EQ(s, from_tokens(lab[i]));
    EXPECT_EQ(train_puzzles.count(in[i]), 0u) << "test puzzle " << i << " is in train";
  }
  // The sampler reads it, with label 0 (pad) as the ignore label: no Sudoku label is 0.
  TrainSampler sampler(train, 16, 1);
  const Batch b = sampler.next();
  for (int32_t v : b.labels) EXPECT_TRUE(v >= 2 && v <= 10);

  // Deterministic in the seed.
  TempDir again;
  build_sudoku_dataset(again.path(), o);
  EXPECT_EQ(trm_test::read_bytes(again / "train/all__inputs.npy"), trm_test::read_bytes(dir / "train/all__inputs.npy"));
  EXPECT_EQ(trm_test::read_bytes(again / "test/all__labels.npy"), trm_test::read_bytes(dir / "test/all__labels.npy"));
}

// build-data's default Sudoku dataset (the config table's build.*: 2000 + 200 puzzles of
// 75..79 givens) takes seconds.
TEST(BuildData, DefaultSudokuDatasetIsQuick) {
  TempDir dir;
  const SudokuBuildOptions o = sudoku_options();
  const BuildReport r = build_sudoku_dataset(dir.path(), o);
  EXPECT_EQ(r.train_examples, o.train_puzzles);
  EXPECT_EQ(r.test_examples, o.test_puzzles);
  EXPECT_LT(r.seconds, 10.0);
}

TEST(BuildData, MazeDatasetInTheReferenceLayout) {
  TempDir dir;
  const MazeBuildOptions o =
      maze_options({{"train", 12}, {"test", 5}, {"maze_size", 15}, {"augmentations", 7}, {"seed", 3}});
  const BuildReport r = build_maze_dataset(dir.path(), o);
  EXPECT_EQ(r.train_examples, 96);
  EXPECT_EQ(r.test_examples, 5);
  const DatasetSplit train = DatasetSplit::open(dir / "train"), test = DatasetSplit::open(dir / "test");
  check_reference_metadata(train, 6, 225, 12, 96);
  check_reference_metadata(test, 6, 225, 5, 5);
  EXPECT_EQ(train.metadata().token_names, maze_token_names());
  EXPECT_EQ(test.metadata().token_names, maze_token_names());
  std::set<std::string> train_grids;
  std::vector<int32_t> buf(225);
  for (const DatasetSplit* d : {&train, &test}) {
    const DatasetSet& s = d->sets()[0];
    for (int64_t e = 0; e < s.num_examples(); ++e) {
      s.inputs.copy_int32(e * 225, 225, buf.data());
      const std::string grid = maze_from_tokens(std::vector<uint8_t>(buf.begin(), buf.end()));
      s.labels.copy_int32(e * 225, 225, buf.data());
      const std::string sol = maze_from_tokens(std::vector<uint8_t>(buf.begin(), buf.end()));
      EXPECT_EQ(sol, solve_maze(grid, 15).empty() ? "x" : sol);
      EXPECT_EQ(std::count(sol.begin(), sol.end(), 'o'), shortest_path_length(grid, 15) - 1);
      if (d == &train) train_grids.insert(grid);
      else EXPECT_EQ(train_grids.count(grid), 0u);
    }
  }
}

// The config table bounds build.min_givens, build.max_givens and build.maze_size by the
// builders' own constants, not by literals of its own: were one restated as a number, a change
// to the constant would leave the table's bound behind and this would fail. A config the table
// accepts is then one the builder accepts (its extremes build), and one it refuses names the
// bound.
TEST(BuildData, TheConfigTablesBoundsAreTheBuilders) {
  const nlohmann::json build = nlohmann::json::parse(config_schema_json())["properties"]["build"]["properties"];
  auto bounds = [&](const char* field) {
    return std::make_pair(build[field]["minimum"].get<int>(), build[field]["maximum"].get<int>());
  };
  EXPECT_EQ(bounds("min_givens"), std::make_pair(kMinSudokuGivens, kMaxSudokuGivens));
  EXPECT_EQ(bounds("max_givens"), std::make_pair(kMinSudokuGivens, kMaxSudokuGivens));
  EXPECT_EQ(bounds("maze_size"), std::make_pair(kMinMazeSize, kMaxMazeSize));
  EXPECT_MLH_ERROR(parse_config({{"build", {{"maze_size", kMaxMazeSize + 1}}}}),
                   std::to_string(kMaxMazeSize));
  EXPECT_MLH_ERROR(parse_config({{"build", {{"min_givens", kMinSudokuGivens - 1}}}}),
                   std::to_string(kMinSudokuGivens));
  TempDir dir;
  for (const int size : {kMinMazeSize, kMaxMazeSize}) {
    const BuildReport r =
        build_maze_dataset(dir / std::to_string(size), maze_options({{"train", 1}, {"test", 1}, {"maze_size", size}}));
    EXPECT_EQ(r.train_examples, 1);
  }
}

TEST(BuildData, BadOptionsNameTheOption) {
  TempDir dir;
  auto sudoku = [&](auto change, const std::string& option) {
    SudokuBuildOptions o = sudoku_options({{"train", 2}, {"test", 2}});
    change(o);
    EXPECT_MLH_ERROR(build_sudoku_dataset(dir / "s", o), "option '" + option + "'");
  };
  sudoku([](SudokuBuildOptions& o) { o.train_puzzles = 0; }, "train_puzzles");
  sudoku([](SudokuBuildOptions& o) { o.test_puzzles = -1; }, "test_puzzles");
  sudoku([](SudokuBuildOptions& o) { o.min_givens = kMinSudokuGivens - 1; }, "min_givens");
  sudoku([](SudokuBuildOptions& o) { o.max_givens = kMaxSudokuGivens + 1; }, "max_givens");
  sudoku([](SudokuBuildOptions& o) { o.min_givens = 80; o.max_givens = 79; }, "min_givens");
  sudoku([](SudokuBuildOptions& o) { o.augmentations = -1; }, "augmentations");
  auto maze = [&](auto change, const std::string& option) {
    MazeBuildOptions o = maze_options({{"train", 2}, {"test", 2}});
    change(o);
    EXPECT_MLH_ERROR(build_maze_dataset(dir / "m", o), "option '" + option + "'");
  };
  maze([](MazeBuildOptions& o) { o.train_mazes = 0; }, "train_mazes");
  maze([](MazeBuildOptions& o) { o.test_mazes = 0; }, "test_mazes");
  maze([](MazeBuildOptions& o) { o.size = kMinMazeSize - 1; }, "size");
  maze([](MazeBuildOptions& o) { o.size = kMaxMazeSize + 1; }, "size");
  maze([](MazeBuildOptions& o) { o.augmentations = 8; }, "augmentations");
  EXPECT_FALSE(std::filesystem::exists(dir / "s"));  // nothing written on a bad option
}

}  // namespace
