// The user's levels as training and evaluation read them: every puzzle solved as it loads,
// each problem the solver finds named by file and line (a wrong `optimal`, no solution, solved
// before a move, too large for the network, longer than the step limit), a folder of level
// files read in name order; and the sources that train on them: the solve record, and the
// per-environment mix with generated puzzles.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include "specs_from_config.hpp"
#include "env/level_file.hpp"
#include "env/level_set.hpp"
#include "env/level_sources.hpp"
#include "env/puzzle_env.hpp"
#include "env/solver.hpp"
#include "env/env.hpp"

namespace {

using namespace ppo;
namespace fs = std::filesystem;

// A 4x4 puzzle solved by down, left (docs/ppo.md's example).
const char* kTwoMoves = "size 4\nboard\n..#T\n....\n.#..\nx...\nend\n";
// The tile only stops against walls, so the centre target is out of reach.
const char* kNoSolution = "size 3\nboard\nT..\n.x.\n...\nend\n";

// Expects check_levels(text) to throw a LevelError on `line` whose message holds `what`.
void expect_refused(const std::string& text, int line, const std::string& what, const LevelLimits& limits = {}) {
  try {
    check_levels(parse_level_entries(text, "mine.txt"), "mine.txt", limits);
    ADD_FAILURE() << "accepted:\n" << text;
  } catch (const LevelError& e) {
    EXPECT_EQ(e.file(), "mine.txt");
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_NE(e.problem().find(what), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()), "mine.txt:" + std::to_string(line) + ": " + e.problem());
  }
}

TEST(LevelEntries, RecordThePuzzlesLinesAndTheOptimalLine) {
  const auto entries = parse_level_entries(std::string("# mine\n\nsize 4\noptimal 2\nboard\n..#T\n....\n.#..\nx...\nend\n\n") +
                                               kTwoMoves,
                                           "mine.txt");
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].line, 3);
  EXPECT_EQ(entries[0].optimal_line, 4);
  EXPECT_EQ(entries[0].puzzle.optimal, 2);
  EXPECT_EQ(entries[1].line, 12);
  EXPECT_EQ(entries[1].optimal_line, 0);
  EXPECT_EQ(entries[1].puzzle.optimal, -1);
}

TEST(LevelCheck, TheSolverFillsInAndConfirmsOptima) {
  const std::vector<Puzzle> p =
      check_levels(parse_level_entries(std::string(kTwoMoves) + "size 4\noptimal 2\nboard\n..#T\n....\n.#..\nx...\nend\n",
                                       "mine.txt"),
                   "mine.txt", {});
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].optimal, 2);  // computed
  EXPECT_EQ(p[1].optimal, 2);  // claimed, and right
}

TEST(LevelCheck, AWrongOptimalIsRefusedOnItsLine) {
  expect_refused(std::string(kTwoMoves) + "\nsize 4\noptimal 3\nboard\n..#T\n....\n.#..\nx...\nend\n", 10,
                 "optimal 3 is wrong: the solver solves puzzle 2 (4x4) in 2 moves at best");
  expect_refused("size 4\noptimal 1\nboard\n..#T\n....\n.#..\nx...\nend\n", 2, "optimal 1 is wrong");
}

TEST(LevelCheck, PuzzlesTheSolverCannotSolveAreRefusedOnTheirLine) {
  expect_refused(std::string(kTwoMoves) + "# the second\n" + kNoSolution, 9, "puzzle 2 (3x3) has no solution");
  LevelLimits tiny;
  tiny.solver_states = 1;
  expect_refused(kTwoMoves, 1, "the solver gave up after", tiny);
  expect_refused("size 3\nboard\n*..\n...\n...\nend\n", 1, "solved before its first move");
}

TEST(LevelCheck, BoardsLargerThanTheNetworkAndOptimaPastTheStepLimitAreRefused) {
  LevelLimits l;
  l.max_size = 3;
  l.max_size_why = "(puzzle.size)";
  expect_refused(kTwoMoves, 1, "puzzle 1 (4x4) is larger than the 3x3 boards (puzzle.size)", l);
  LevelLimits steps;
  steps.max_steps = 1;
  steps.max_steps_why = "(puzzle.max_steps)";
  expect_refused(kTwoMoves, 1, "needs 2 moves, more than the step limit of 1 (puzzle.max_steps)", steps);
  steps.max_steps = 2;
  EXPECT_EQ(check_levels(parse_level_entries(kTwoMoves, "mine.txt"), "mine.txt", steps).size(), 1u);
}

class LevelSetFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("level-set-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  fs::path dir_;
};

TEST_F(LevelSetFiles, AFolderIsItsLevelFilesInNameOrder) {
  write("b.lvl", "size 3\nboard\nT..\n...\n..x\nend\n");
  write("a.txt", kTwoMoves);
  write("README.md", "not a level file");
  fs::create_directories(dir_ / "sub");
  write("sub/c.txt", kNoSolution);  // subfolders are not read
  const LevelSet set = load_level_set(dir_.string(), {});
  ASSERT_EQ(set.files.size(), 2u);
  EXPECT_EQ(fs::path(set.files[0]).filename(), "a.txt");
  EXPECT_EQ(fs::path(set.files[1]).filename(), "b.lvl");
  ASSERT_EQ(set.puzzles.size(), 2u);
  EXPECT_EQ(set.puzzles[0].size, 4);
  EXPECT_EQ(set.puzzles[1].size, 3);
  EXPECT_EQ(set.max_size, 4);
  EXPECT_EQ(set.max_optimal, 2);
  const LevelSet one = load_level_set(dir_.string() + "/b.lvl", {});
  EXPECT_EQ(one.files, std::vector<std::string>{dir_.string() + "/b.lvl"});
  EXPECT_EQ(one.puzzles.size(), 1u);
}

TEST_F(LevelSetFiles, ABadFileInAFolderIsNamedWithItsLine) {
  write("a.txt", kTwoMoves);
  const std::string bad = write("b.txt", "size 3\nboard\nT..\n..\n..x\nend\n");
  try {
    load_level_set(dir_.string(), {});
    FAIL();
  } catch (const LevelError& e) {
    EXPECT_EQ(e.file(), bad);
    EXPECT_EQ(e.line(), 4);
  }
}

TEST_F(LevelSetFiles, MissingEmptyAndPuzzleFreeSourcesAreRefused) {
  auto refused = [](const std::string& path, const std::string& what) {
    try {
      load_level_set(path, {});
      ADD_FAILURE() << path;
    } catch (const LevelError& e) {
      EXPECT_EQ(e.line(), 0);
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      EXPECT_NE(e.problem().find(what), std::string::npos) << e.what();
    }
  };
  refused((dir_ / "none.txt").string(), "no such file or folder");
  fs::create_directories(dir_ / "empty");
  write("empty/notes.md", "no levels here");
  refused((dir_ / "empty").string(), "holds no level file");
  refused(write("comments.txt", "# only a comment\n\n"), "holds no puzzle");
}

TEST(SolveWindow, RateOverTheLastEpisodesAndCountsOfAll) {
  SolveWindow w(4);
  EXPECT_EQ(w.rate(), 0.0);
  for (bool s : {true, true, false, false}) w.add(s);
  EXPECT_DOUBLE_EQ(w.rate(), 0.5);
  w.add(true);  // drops the first success
  w.add(true);  // drops the second
  EXPECT_DOUBLE_EQ(w.rate(), 0.5);
  w.add(true);  // drops a failure
  EXPECT_DOUBLE_EQ(w.rate(), 0.75);
  EXPECT_EQ(w.episodes(), 7);
  EXPECT_EQ(w.solved(), 5);
  EXPECT_THROW(SolveWindow(0), std::invalid_argument);
}

// A source of one fixed puzzle that counts what it hands out and what is reported back.
struct CountingSource : PuzzleSource {
  explicit CountingSource(Puzzle p) : puzzle(std::move(p)) {}
  Puzzle puzzle;
  int given = 0, reports = 0, solved = 0;
  Puzzle next() override {
    ++given;
    return puzzle;
  }
  void report(bool s) override {
    ++reports;
    solved += s;
  }
};

Puzzle first(const std::string& text) { return check_levels(parse_level_entries(text, "t"), "t", {}).at(0); }

TEST(MixedSource, DrawsTheShareFromTheLevelsAndReportsToWhereThePuzzleCameFrom) {
  auto levels = std::make_shared<CountingSource>(first(kTwoMoves));
  auto generated = std::make_shared<CountingSource>(first("size 3\nboard\nT..\n...\n..x\nend\n"));
  MixedSource mix(levels, generated, 0.25, 7);
  int from_levels = 0;
  for (int k = 0; k < 4000; ++k) {
    const Puzzle p = mix.next();
    const bool mine = p == levels->puzzle;
    from_levels += mine;
    mix.report(mine);  // solved exactly when it was the user's level
  }
  EXPECT_NEAR(from_levels / 4000.0, 0.25, 0.05);
  EXPECT_EQ(levels->given, from_levels);
  EXPECT_EQ(levels->reports, from_levels);
  EXPECT_EQ(levels->solved, from_levels);
  EXPECT_EQ(generated->reports, 4000 - from_levels);
  EXPECT_EQ(generated->solved, 0);
  // The same seed draws the same sequence.
  MixedSource a(levels, generated, 0.5, 3), b(levels, generated, 0.5, 3);
  for (int k = 0; k < 50; ++k) EXPECT_EQ(a.next(), b.next());
  MixedSource all(levels, generated, 1.0, 3);
  for (int k = 0; k < 50; ++k) EXPECT_EQ(all.next(), levels->puzzle);
  EXPECT_THROW(MixedSource(levels, generated, 0.0, 1), std::invalid_argument);
  EXPECT_THROW(MixedSource(levels, generated, 1.5, 1), std::invalid_argument);
  EXPECT_THROW(MixedSource(nullptr, generated, 0.5, 1), std::invalid_argument);
}

// Vectorized environments, one mix each over shared sources, played optimally: every finished
// episode is recorded by the source its puzzle came from, and the levels' record sees exactly
// the episodes played on them.
TEST(MixedSource, EachEnvironmentsEpisodesGoBackToTheirSources) {
  auto levels = std::make_shared<CountingSource>(first(kTwoMoves));
  auto results = std::make_shared<SolveWindow>(100);
  auto recorded = std::make_shared<RecordingSource>(levels, results);
  auto generated = std::make_shared<CountingSource>(first("size 3\nboard\nT..\n...\n..x\nend\n"));
  const PuzzleEnvOptions o = ppo_env_test::puzzle_env_options_with(4, {{"max_steps", 10}});
  uint64_t made = 0;
  VectorEnv v([&] { return std::make_unique<PuzzleEnv>(std::make_shared<MixedSource>(recorded, generated, 0.5, made++), o); },
              4, 1);
  v.reset();
  std::vector<int> actions(4);
  int on_levels = 0, finished = 0;
  for (int t = 0; t < 200; ++t) {
    for (int i = 0; i < 4; ++i) {
      const auto& e = static_cast<const PuzzleEnv&>(v.env(i));
      actions[i] = solve(e.puzzle(), e.state()).path.at(0);
    }
    // Which source each env's running puzzle came from, before the step ends it.
    std::vector<bool> mine(4);
    for (int i = 0; i < 4; ++i) mine[i] = static_cast<const PuzzleEnv&>(v.env(i)).puzzle() == levels->puzzle;
    v.step(actions.data());
    for (int i = 0; i < 4; ++i)
      if (v.terminated()[i]) {
        ++finished;
        on_levels += mine[i];
      }
  }
  ASSERT_GT(finished, 100);
  EXPECT_GT(on_levels, 0);
  EXPECT_LT(on_levels, finished);
  EXPECT_EQ(results->episodes(), on_levels);
  EXPECT_EQ(results->solved(), on_levels);  // optimal play solves every one
  EXPECT_DOUBLE_EQ(results->rate(), 1.0);
  EXPECT_EQ(levels->reports, on_levels);
  EXPECT_EQ(generated->reports, finished - on_levels);
}

}  // namespace
