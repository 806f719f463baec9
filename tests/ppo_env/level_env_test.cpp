// Level files (round trip, every error with file and line) and PuzzleEnv (rewards, step
// limit, observation planes, action mask, with VectorEnv).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "env/curriculum.hpp"
#include "env/generator.hpp"
#include "env/level_file.hpp"
#include "env/puzzle_env.hpp"
#include "env/solver.hpp"
#include "env/env.hpp"

#include "specs_from_config.hpp"

namespace {

using namespace ppo;
using ppo_env_test::generator_spec_with;
using ppo_env_test::puzzle_env_options_with;

const char* kTwoPuzzles =
    "# two puzzles\n"
    "size 4\n"
    "colors single\n"
    "optimal 3\n"
    "board\n"
    "T.#.\n"
    "....\n"
    "....\n"
    "...x\n"
    "end\n"
    "\n"
    "size 3\n"
    "colors multi\n"
    "covered 1 1 a\n"
    "board\n"
    ".#b\n"
    ".B.\n"
    "A..\n"
    "end\n";

TEST(LevelFile, ParsesAndFormatsExactly) {
  const auto v = parse_levels(kTwoPuzzles, "two.txt");
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].size, 4);
  EXPECT_FALSE(v[0].multi_color);
  EXPECT_EQ(v[0].optimal, 3);
  EXPECT_EQ(v[0].tiles, std::vector<int>{0});
  EXPECT_EQ(v[0].targets, std::vector<int>{15});
  EXPECT_EQ(v[0].blocked[2], 1);
  EXPECT_TRUE(v[1].multi_color);
  EXPECT_EQ(v[1].optimal, -1);
  EXPECT_EQ(v[1].tiles, (std::vector<int>{6, 4}));    // A (2,0), B (1,1)
  EXPECT_EQ(v[1].targets, (std::vector<int>{4, 2}));  // a under B, b (0,2)
  // The formatted text is the input without the comment.
  EXPECT_EQ("# two puzzles\n" + format_levels(v), kTwoPuzzles);
}

TEST(LevelFile, RoundTripThroughFileManyPuzzles) {
  std::mt19937_64 rng(77);
  std::vector<Puzzle> puzzles;
  for (int k = 0; k < 12; ++k) {
    const GeneratorSpec s =
        generator_spec_with({{"size", 3 + k % 6}, {"tiles", 1 + k % 4}, {"multi_color", k % 2 == 1}, {"max_moves", 5}});
    Puzzle p = generate_puzzle(s, rng);
    if (k % 3 == 0) p.optimal = -1;
    puzzles.push_back(p);
  }
  const std::string path = ::testing::TempDir() + "ppo_env_levels.txt";
  save_levels(path, puzzles);
  EXPECT_EQ(load_levels(path), puzzles);
  std::remove(path.c_str());
  EXPECT_EQ(parse_levels(format_levels(puzzles), "x"), puzzles);
}

void expect_error(const std::string& text, int line, const std::string& what) {
  try {
    parse_levels(text, "bad.lvl");
    ADD_FAILURE() << "no error for:\n" << text;
  } catch (const LevelError& e) {
    EXPECT_EQ(e.file(), "bad.lvl");
    EXPECT_EQ(e.line(), line) << e.what();
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("bad.lvl:" + std::to_string(line) + ": ", 0), 0u) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  }
}

TEST(LevelFile, ErrorsNameFileLineAndProblem) {
  expect_error("size 3\nboard\nT..\n..\n..x\nend\n", 4, "bad row length 2, expected 3");
  expect_error("size 3\nboard\nT..\n.?.\n..x\nend\n", 4, "unknown character '?'");
  expect_error("size 3\nboard\nT..\n.A.\n..x\nend\n", 4, "unknown character 'A'");
  expect_error("size 3\ncolors multi\nboard\nT..\n...\n..a\nend\n", 4, "unknown character 'T'");
  expect_error("size 3\nboard\nT..\n.T.\n..x\nend\n", 2, "tile/target count mismatch: 2 tiles, 1");
  expect_error("board\nT..\n", 1, "board before 'size'");
  expect_error("# c\nsize 3\nboard\nT..\n...\n", 5, "unterminated board");
  expect_error("size 3\nboard\nT..\n...\n..x\n", 5, "missing 'end'");
  expect_error("size 3\nboard\nT..\n...\nend\n", 5, "board has 2 rows, expected 3");
  expect_error("size 3\nboard\nT..\n...\n..x\n...\n", 6, "expected 'end'");
  expect_error("\nsize 1\n", 2, "size 1 out of range [2, 16]");
  expect_error("size 17\n", 1, "out of range");
  expect_error("size x\n", 1, "not a number");
  expect_error("size 3\nsize 4\n", 2, "duplicate 'size'");
  expect_error("size 3\ncolors blue\n", 2, "colors must be 'single' or 'multi'");
  expect_error("size 3\noptimal -2\n", 2, "optimal '-2'");
  expect_error("size 3\nshape round\n", 2, "unknown key 'shape'");
  expect_error("size 3\n", 1, "puzzle without a board");
  expect_error("end\n", 1, "'end' without 'board'");
  expect_error("size 3\ncolors multi\nboard\nA.b\n...\n..a\nend\n", 3, "tile/target count mismatch");
  expect_error("size 3\ncolors multi\nboard\nB..\n...\n..b\nend\n", 3, "tile 'A' missing");
  expect_error("size 3\ncolors multi\nboard\nA.A\n...\n.aa\nend\n", 4, "tile 'A' appears twice");
  expect_error("size 3\ncolors multi\ncovered 1 1 a\nboard\nA..\n...\n...\nend\n", 3,
               "has no tile on it");
  expect_error("size 3\ncovered 0 0 a\nboard\nT..\n...\n..x\nend\n", 2, "only for multi-color");
  expect_error("size 3\nboard\n#..\n...\n..*\nend\n\nsize 2\nboard\nTx\n.\nend\n", 11,
               "bad row length 1");
}

TEST(LevelFile, MissingFileIsALevelError) {
  try {
    load_levels("/nonexistent/dir/levels.txt");
    FAIL();
  } catch (const LevelError& e) {
    EXPECT_EQ(e.line(), 0);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/levels.txt"), std::string::npos);
  }
  EXPECT_THROW(save_levels("/nonexistent/dir/levels.txt", parse_levels(kTwoPuzzles, "x")),
               LevelError);
}

// A source that hands out fixed puzzles and records reports.
struct FixedSource : PuzzleSource {
  std::vector<Puzzle> puzzles;
  size_t i = 0;
  int solved = 0, failed = 0;
  Puzzle next() override { return puzzles[i++ % puzzles.size()]; }
  void report(bool s) override { (s ? solved : failed)++; }
};

Puzzle one(const std::string& text) { return parse_levels(text, "t").at(0); }

TEST(PuzzleEnv, RewardsSolveAndInvalidMoves) {
  auto src = std::make_shared<FixedSource>();
  src->puzzles = {one("size 4\noptimal 2\nboard\nT.#.\n....\n....\n...x\nend\n")};
  PuzzleEnv env(src, puzzle_env_options_with(8));
  EXPECT_EQ(env.observation_shape(), (std::vector<int64_t>{8, 8, 8}));
  EXPECT_EQ(env.num_actions(), 4);
  std::vector<float> obs(env.observation_size());
  std::mt19937_64 rng(0);
  env.reset(rng, obs.data());
  EXPECT_EQ(env.optimal(), 2);
  StepResult r = env.step(kUp, obs.data());  // into the wall
  EXPECT_TRUE(r.invalid_move);
  EXPECT_FLOAT_EQ(r.reward, -0.1f);
  EXPECT_FALSE(r.terminated || r.truncated);
  r = env.step(kDown, obs.data());
  EXPECT_FALSE(r.invalid_move);
  EXPECT_FLOAT_EQ(r.reward, -0.1f);
  r = env.step(kRight, obs.data());
  EXPECT_TRUE(r.terminated);
  EXPECT_FALSE(r.truncated);
  EXPECT_TRUE(r.solved);
  EXPECT_FLOAT_EQ(r.reward, -0.1f + 10.0f);
  EXPECT_EQ(env.steps(), 3);
  EXPECT_TRUE(env.last_episode().solved);
  EXPECT_EQ(env.last_episode().steps, 3);
  EXPECT_EQ(env.last_episode().optimal, 2);
  EXPECT_EQ(src->solved, 1);
  EXPECT_THROW(env.step(kLeft, obs.data()), std::logic_error);
  env.reset(rng, obs.data());
  EXPECT_THROW(env.step(4, obs.data()), std::out_of_range);
}

TEST(PuzzleEnv, StepLimitIsTerminationWithFailReward) {
  auto src = std::make_shared<FixedSource>();
  src->puzzles = {one("size 4\nboard\nT.#.\n....\n....\n...x\nend\n")};
  const PuzzleEnvOptions o = puzzle_env_options_with(8, {{"max_steps", 3}});
  PuzzleEnv env(src, o);
  std::vector<float> obs(env.observation_size());
  std::mt19937_64 rng(0);
  env.reset(rng, obs.data());
  EXPECT_FALSE(env.step(kUp, obs.data()).terminated);
  EXPECT_FALSE(env.step(kLeft, obs.data()).terminated);
  const StepResult r = env.step(kUp, obs.data());
  EXPECT_TRUE(r.terminated);
  EXPECT_FALSE(r.truncated);
  EXPECT_FALSE(r.solved);
  EXPECT_FLOAT_EQ(r.reward, -0.1f - 5.0f);
  EXPECT_FALSE(env.last_episode().solved);
  EXPECT_EQ(src->failed, 1);
  // Solving on the last allowed step counts as solved.
  env.reset(rng, obs.data());
  env.step(kUp, obs.data());
  env.step(kDown, obs.data());
  const StepResult s = env.step(kRight, obs.data());
  EXPECT_TRUE(s.solved);
  EXPECT_FLOAT_EQ(s.reward, 9.9f);
}

TEST(PuzzleEnv, ObservationPlanesOnSmallBoard) {
  // 3x3 multi-color board in a 4x4 observation:
  //   A # b        A (0,0), B (1,1) on target a, b (0,2), blocked (0,1)
  //   . B .
  //   . . .
  auto src = std::make_shared<FixedSource>();
  src->puzzles = {one("size 3\ncolors multi\ncovered 1 1 a\nboard\nA#b\n.B.\n...\nend\n")};
  const PuzzleEnvOptions o = puzzle_env_options_with(4, {{"max_steps", 10}});
  PuzzleEnv env(src, o);
  ASSERT_EQ(env.observation_size(), 8 * 16);
  std::vector<float> obs(env.observation_size());
  std::mt19937_64 rng(0);
  env.reset(rng, obs.data());
  auto at = [&](int plane, int r, int c) { return obs[plane * 16 + r * 4 + c]; };
  const float u = 1.0f / 8.0f;  // one cell of distance: 1 / (2 * obs_size)
  // Plane 0: blocked (0,1) and the padding row 3 / column 3.
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c)
      EXPECT_EQ(at(0, r, c), (r == 3 || c == 3 || (r == 0 && c == 1)) ? 1.0f : 0.0f) << r << c;
  EXPECT_EQ(at(1, 0, 0), 1.0f);
  EXPECT_EQ(at(1, 1, 1), 1.0f);
  EXPECT_EQ(at(1, 0, 2), 0.0f);
  EXPECT_EQ(at(2, 1, 1), 1.0f);
  EXPECT_EQ(at(2, 0, 2), 1.0f);
  EXPECT_EQ(at(2, 0, 0), 0.0f);
  // Plane 3: distance to the nearest target (a at (1,1), b at (0,2)) through free cells.
  EXPECT_FLOAT_EQ(at(3, 1, 1), 0.0f);
  EXPECT_FLOAT_EQ(at(3, 0, 2), 0.0f);
  EXPECT_FLOAT_EQ(at(3, 0, 0), 2 * u);  // (0,0)->(1,0)->(1,1)
  EXPECT_FLOAT_EQ(at(3, 2, 0), 2 * u);
  EXPECT_FLOAT_EQ(at(3, 2, 2), 2 * u);
  EXPECT_FLOAT_EQ(at(3, 0, 1), 1.0f);   // blocked
  EXPECT_FLOAT_EQ(at(3, 3, 3), 1.0f);   // padding
  // Planes 4/5: colors (i + 1) / 2.
  EXPECT_FLOAT_EQ(at(4, 0, 0), 0.5f);
  EXPECT_FLOAT_EQ(at(4, 1, 1), 1.0f);
  EXPECT_FLOAT_EQ(at(5, 1, 1), 0.5f);
  EXPECT_FLOAT_EQ(at(5, 0, 2), 1.0f);
  EXPECT_FLOAT_EQ(at(5, 0, 0), 0.0f);
  // Plane 6: A to a = 2, B to b: (1,1)->(1,2)->(0,2) = 2 (not 0: a is not B's).
  EXPECT_FLOAT_EQ(at(6, 0, 0), 2 * u);
  EXPECT_FLOAT_EQ(at(6, 1, 1), 2 * u);
  EXPECT_FLOAT_EQ(at(6, 2, 2), 0.0f);
  // Plane 7: full budget, then 9/10 after a step.
  EXPECT_FLOAT_EQ(at(7, 3, 3), 1.0f);
  // Action mask: A can go down; B can go up? (0,1) blocked -> no; left (1,0) yes.
  uint8_t mask[4];
  env.action_mask(mask);
  EXPECT_EQ(mask[kUp], 0);  // A at the wall, B under the blocked cell
  EXPECT_EQ(mask[kDown], 1);
  EXPECT_EQ(mask[kLeft], 1);
  EXPECT_EQ(mask[kRight], 1);
  env.step(kDown, obs.data());  // A -> (2,0), B -> (2,1)
  EXPECT_FLOAT_EQ(at(7, 0, 0), 0.9f);
  EXPECT_EQ(at(1, 2, 0), 1.0f);
  EXPECT_EQ(at(1, 2, 1), 1.0f);
  EXPECT_EQ(at(1, 0, 0), 0.0f);
  EXPECT_FLOAT_EQ(at(4, 2, 1), 1.0f);
  EXPECT_FLOAT_EQ(at(6, 2, 1), 3 * u);  // (2,1)->(2,2)->(1,2)->(0,2)
  env.action_mask(mask);
  EXPECT_EQ(mask[kDown], 0);
  EXPECT_EQ(mask[kUp], 1);
}

TEST(PuzzleEnv, SingleColorPlanesAndSizeChecks) {
  auto src = std::make_shared<FixedSource>();
  src->puzzles = {one("size 3\nboard\nT.x\n...\n..*\nend\n")};
  PuzzleEnvOptions o = puzzle_env_options_with(3);
  PuzzleEnv env(src, o);
  std::vector<float> obs(env.observation_size());
  std::mt19937_64 rng(0);
  env.reset(rng, obs.data());
  auto at = [&](int plane, int r, int c) { return obs[plane * 9 + r * 3 + c]; };
  EXPECT_FLOAT_EQ(at(4, 0, 0), 1.0f);
  EXPECT_FLOAT_EQ(at(4, 2, 2), 1.0f);
  EXPECT_FLOAT_EQ(at(5, 0, 2), 1.0f);
  EXPECT_FLOAT_EQ(at(6, 0, 0), 2.0f / 6.0f);  // nearest target (0,2), 2 cells, / (2*3)
  EXPECT_FLOAT_EQ(at(6, 2, 2), 0.0f);
  src->puzzles = {one("size 4\nboard\nT...\n....\n....\n...x\nend\n")};
  EXPECT_THROW(env.reset(rng, obs.data()), std::invalid_argument);
  EXPECT_THROW(PuzzleEnv(nullptr, o), std::invalid_argument);
  o.obs_size = 1;
  EXPECT_THROW(PuzzleEnv(src, o), std::invalid_argument);
}

// 5x5 boards of two tiles, up to 6 moves, on a curriculum of 8-episode windows from level 1.
GeneratorSpec two_tiles_on_five_by_five() {
  return generator_spec_with({{"size", 5}, {"tiles", 2}, {"max_moves", 6}});
}
CurriculumOptions quick_curriculum(double threshold) {
  CurriculumOptions co;
  co.start_level = 1;
  co.window = 8;
  co.threshold = threshold;
  return co;
}

TEST(PuzzleEnv, VectorEnvWithSharedCurriculum) {
  const GeneratorSpec spec = two_tiles_on_five_by_five();
  const CurriculumOptions co = quick_curriculum(0.5);
  auto cur = std::make_shared<Curriculum>(spec, co);
  const PuzzleEnvOptions o = puzzle_env_options_with(5, {{"max_steps", 20}});
  VectorEnv v([&] { return std::unique_ptr<Env>(new PuzzleEnv(cur, o)); }, 4, 1);
  v.reset();
  // Play the optimal solution in every env (solve from the current state each step).
  std::vector<int> actions(4);
  int solved = 0;
  for (int t = 0; t < 300; ++t) {
    for (int i = 0; i < 4; ++i) {
      const auto& e = static_cast<const PuzzleEnv&>(v.env(i));
      const SolveResult r = solve(e.puzzle(), e.state());
      ASSERT_TRUE(r.solved());
      actions[i] = r.path.at(0);
      for (int m = 0; m < 4; ++m)
        EXPECT_EQ(v.action_masks()[i * 4 + m], move_changes(e.puzzle(), e.state(), m) ? 1 : 0);
    }
    v.step(actions.data());
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(v.truncated()[i], 0);
      if (v.terminated()[i]) {
        const auto& e = static_cast<const PuzzleEnv&>(v.env(i));
        EXPECT_TRUE(e.last_episode().solved);
        EXPECT_EQ(e.last_episode().steps, e.last_episode().optimal);  // optimal play
        EXPECT_GT(v.rewards()[i], 9.0f);
        ++solved;
      }
    }
  }
  EXPECT_EQ(static_cast<int>(v.finished_episodes().size()), solved);
  for (const auto& ep : v.finished_episodes()) EXPECT_TRUE(ep.solved);
  EXPECT_GT(solved, 40);
  EXPECT_EQ(cur->level(), 6);  // every report a success: climbed to the top
}

// A checkpoint in mid-episode: the vector's episodes (PuzzleEnv::snapshot) and the shared
// curriculum's state put into fresh objects go on exactly as the originals do: the same
// observations, rewards and puzzles, and the curriculum at the same level.
TEST(PuzzleEnv, AVectorAndItsCurriculumRestoredMidEpisodeGoOnAsTheOriginals) {
  const GeneratorSpec spec = two_tiles_on_five_by_five();
  CurriculumOptions co = quick_curriculum(0.25);
  co.seed = 11;
  const PuzzleEnvOptions o = puzzle_env_options_with(5, {{"max_steps", 12}});
  auto make = [&](std::shared_ptr<Curriculum> cur) {
    return std::make_unique<VectorEnv>([cur, o] { return std::unique_ptr<Env>(new PuzzleEnv(cur, o)); }, 4, 5);
  };
  auto cur = std::make_shared<Curriculum>(spec, co);
  auto v = make(cur);
  v->reset();
  std::mt19937_64 actions_rng(3);
  std::vector<int> actions(4);
  auto step = [&](VectorEnv& env, std::mt19937_64& rng) {
    for (int& a : actions) a = static_cast<int>(rng() % 4);
    env.step(actions.data());
  };
  for (int t = 0; t < 137; ++t) step(*v, actions_rng);  // mid-episode in some envs
  ASSERT_GT(cur->level(), co.start_level) << "the curriculum should have moved for the test to mean something";
  const nlohmann::json envs = v->state(), curriculum = cur->state();

  auto cur2 = std::make_shared<Curriculum>(spec, co);
  auto w = make(cur2);
  w->reset();
  w->load_state(envs);
  cur2->load_state(curriculum);
  std::mt19937_64 actions_rng2 = actions_rng;
  for (int t = 0; t < 200; ++t) {
    step(*v, actions_rng);
    step(*w, actions_rng2);
    ASSERT_EQ(v->observations(), w->observations()) << "step " << t;
    ASSERT_EQ(v->rewards(), w->rewards()) << "step " << t;
    ASSERT_EQ(cur->level(), cur2->level()) << "step " << t;
    ASSERT_EQ(cur->window_count(), cur2->window_count()) << "step " << t;
  }
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(static_cast<const PuzzleEnv&>(v->env(i)).puzzle(), static_cast<const PuzzleEnv&>(w->env(i)).puzzle());

  // A snapshot that does not hold a puzzle, or puts a tile off the board, is refused.
  PuzzleEnv e(cur, o);
  std::vector<double> snap = static_cast<const PuzzleEnv&>(v->env(0)).snapshot();
  EXPECT_NO_THROW(e.restore(snap));
  snap.back() = 999;
  EXPECT_THROW(e.restore(snap), std::invalid_argument);
  EXPECT_THROW(e.restore({1, 2, 3}), std::invalid_argument);
  // A curriculum's level outside the one it runs is refused.
  nlohmann::json high = curriculum;
  high["level"] = 99;
  EXPECT_THROW(cur2->load_state(high), std::invalid_argument);
}

}  // namespace
