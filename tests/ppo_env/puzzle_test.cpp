// The tiler-slider puzzle: slide rules, the BFS solver, the generator and the curriculum.
#include <gtest/gtest.h>

#include <functional>

#include "env/curriculum.hpp"
#include "env/generator.hpp"
#include "env/level_file.hpp"
#include "env/puzzle.hpp"
#include "env/solver.hpp"

#include "specs_from_config.hpp"

namespace {

using namespace ppo;
using ppo_env_test::generator_spec_with;

Puzzle board(const std::string& text) {  // one puzzle in level-file syntax
  const auto v = parse_levels(text, "test");
  EXPECT_EQ(v.size(), 1u);
  return v.at(0);
}
int cell(const Puzzle& p, int r, int c) { return r * p.size + c; }

TEST(PuzzleRules, SingleTileSlidesToWallOrBlockedCell) {
  const Puzzle p = board("size 4\nboard\nT.#.\n....\n....\n...x\nend\n");
  PuzzleState s = initial_state(p);
  EXPECT_FALSE(apply_move(p, s, kUp));    // against the wall
  EXPECT_FALSE(apply_move(p, s, kLeft));
  EXPECT_EQ(s, PuzzleState{0});
  EXPECT_TRUE(apply_move(p, s, kRight));  // stops before the blocked (0,2)
  EXPECT_EQ(s, PuzzleState{cell(p, 0, 1)});
  EXPECT_TRUE(apply_move(p, s, kDown));   // to the bottom wall
  EXPECT_EQ(s, PuzzleState{cell(p, 3, 1)});
  EXPECT_FALSE(is_solved(p, s));
  EXPECT_TRUE(apply_move(p, s, kRight));
  EXPECT_EQ(s, PuzzleState{cell(p, 3, 3)});
  EXPECT_TRUE(is_solved(p, s));
  EXPECT_THROW(apply_move(p, s, 4), std::out_of_range);
  EXPECT_THROW(apply_move(p, s, -1), std::out_of_range);
}

TEST(PuzzleRules, TilesInARowStackAgainstEachOther) {
  Puzzle p = board("size 4\nboard\nT.T*\n.xx.\n....\n....\nend\n");
  PuzzleState s = initial_state(p);  // (0,0) (0,2) (0,3)
  EXPECT_TRUE(apply_move(p, s, kRight));
  EXPECT_EQ(s, (PuzzleState{1, 2, 3}));  // (0,3) stays, (0,2) stays, (0,0) slides to (0,1)
  EXPECT_TRUE(apply_move(p, s, kLeft));
  EXPECT_EQ(s, (PuzzleState{0, 1, 2}));  // nearest-the-left-edge first, others stack
  EXPECT_FALSE(apply_move(p, s, kLeft));
  EXPECT_TRUE(apply_move(p, s, kDown));
  EXPECT_EQ(s, (PuzzleState{12, 13, 14}));
}

TEST(PuzzleRules, ColumnStackingKeepsOrderAndBlockedCellsSplitGroups) {
  // Column 0: tiles at rows 0, 1 and 3, a blocked cell at row 4 of a 6x6; moving down the
  // row-3 tile cannot pass the block, and the others stack above it.
  Puzzle p;
  p.size = 6;
  p.multi_color = true;
  p.blocked.assign(36, 0);
  p.blocked[4 * 6] = 1;
  p.tiles = {0, 6, 18};                  // A (0,0), B (1,0), C (3,0)
  p.targets = {5, 11, 35};
  validate(p);
  PuzzleState s = initial_state(p);
  EXPECT_TRUE(apply_move(p, s, kDown));
  EXPECT_EQ(s, (PuzzleState{6, 12, 18}));  // A (1,0), B (2,0), C (3,0): order kept
  EXPECT_TRUE(apply_move(p, s, kUp));
  EXPECT_EQ(s, (PuzzleState{0, 6, 12}));
  EXPECT_TRUE(apply_move(p, s, kRight));
  EXPECT_EQ(s, (PuzzleState{5, 11, 17}));
  EXPECT_FALSE(move_changes(p, s, kRight));
  EXPECT_TRUE(move_changes(p, s, kLeft));
  EXPECT_TRUE(move_changes(p, s, kDown));   // C can go to (5,5) and the rest follow
  EXPECT_FALSE(move_changes(p, s, kUp));    // A at (0,5), B and C stacked under it
}

TEST(PuzzleRules, MoveChangesAgreesWithApplyMove) {
  std::mt19937_64 rng(5);
  const GeneratorSpec spec =
      generator_spec_with({{"size", 5}, {"tiles", 3}, {"blocked_density", 0.2}, {"max_moves", 4}});
  for (int k = 0; k < 30; ++k) {
    const Puzzle p = generate_puzzle(spec, rng);
    PuzzleState s = initial_state(p);
    for (int step = 0; step < 20; ++step) {
      for (int m = 0; m < 4; ++m) {
        PuzzleState t = s;
        ASSERT_EQ(move_changes(p, s, m), apply_move(p, t, m));
      }
      apply_move(p, s, static_cast<int>(rng() % 4));
    }
  }
}

TEST(PuzzleRules, MultiColorNeedsEachTileOnItsOwnTarget) {
  // Row 0: A B . . with targets b at (0,2), a at (0,3). Right -> A (0,2), B (0,3): the same
  // cells as the targets, wrong colors.
  const Puzzle multi = board("size 4\ncolors multi\nboard\nABba\n....\n....\n....\nend\n");
  PuzzleState s = initial_state(multi);
  EXPECT_TRUE(apply_move(multi, s, kRight));
  EXPECT_EQ(s, (PuzzleState{2, 3}));
  EXPECT_FALSE(is_solved(multi, s));
  Puzzle single = multi;
  single.multi_color = false;
  canonicalize(single);
  EXPECT_TRUE(is_solved(single, s));
  const Puzzle right_colors = board("size 4\ncolors multi\nboard\nABab\n....\n....\n....\nend\n");
  PuzzleState s2 = initial_state(right_colors);
  apply_move(right_colors, s2, kRight);
  EXPECT_TRUE(is_solved(right_colors, s2));
}

TEST(PuzzleRules, RenderShowsSymbols) {
  const Puzzle p = board("size 3\nboard\nT#x\n.*.\n...\nend\n");
  EXPECT_EQ(render(p, initial_state(p)), "T#x\n.*.\n...\n");
  const Puzzle m = board("size 3\ncolors multi\ncovered 1 1 a\nboard\n.#b\n.B.\nA..\nend\n");
  EXPECT_EQ(render(m, initial_state(m)), ".#b\n.B.\nA..\nB on a at (1,1)\n");
}

TEST(PuzzleRules, ValidateRejectsBadPuzzles) {
  Puzzle p = board("size 3\nboard\nT.x\n...\n...\nend\n");
  Puzzle q = p;
  q.targets.push_back(4);
  EXPECT_THROW(validate(q), std::invalid_argument);
  q = p;
  q.blocked[0] = 1;
  EXPECT_THROW(validate(q), std::invalid_argument);
  q = p;
  q.tiles = {9};
  EXPECT_THROW(validate(q), std::invalid_argument);
  q = p;
  q.size = 17;
  EXPECT_THROW(validate(q), std::invalid_argument);
  q = p;
  q.tiles = {0, 0};
  q.targets = {2, 5};
  EXPECT_THROW(validate(q), std::invalid_argument);
}

// The 4x4 board with a blocked (0,2) and the tile at (0,0): by hand, the tile can reach
// (0,1) in 1 move (right), (3,0) in 1 (down), (3,1) and (3,3) in 2, (0,3) in 3 (up from
// (3,3); left from (0,3) is blocked), and nothing else.
Puzzle corner_board(int tr, int tc) {
  Puzzle p = board("size 4\nboard\nT.#.\n....\n....\n...x\nend\n");
  p.targets = {cell(p, tr, tc)};
  return p;
}

TEST(Solver, HandVerifiedOptimalLengths) {
  struct Case { int r, c, moves; };
  for (const Case& k : {Case{0, 1, 1}, Case{3, 0, 1}, Case{3, 1, 2}, Case{3, 3, 2},
                        Case{0, 3, 3}}) {
    const Puzzle p = corner_board(k.r, k.c);
    const SolveResult r = solve(p);
    ASSERT_TRUE(r.solved()) << k.r << "," << k.c;
    EXPECT_EQ(r.moves, k.moves) << k.r << "," << k.c;
    ASSERT_EQ(static_cast<int>(r.path.size()), k.moves);
    PuzzleState s = initial_state(p);
    for (int m : r.path) EXPECT_TRUE(apply_move(p, s, m));
    EXPECT_TRUE(is_solved(p, s));
  }
  const SolveResult three = solve(corner_board(0, 3));
  EXPECT_EQ(three.path, (std::vector<int>{kDown, kRight, kUp}));
}

TEST(Solver, UnsolvableAndAlreadySolved) {
  const SolveResult r = solve(corner_board(1, 1));
  EXPECT_EQ(r.status, SolveResult::Status::kUnsolvable);
  EXPECT_EQ(r.moves, -1);
  EXPECT_EQ(r.states_explored, 6);  // the six reachable cells listed above
  Puzzle done = corner_board(0, 0);
  const SolveResult z = solve(done);
  EXPECT_TRUE(z.solved());
  EXPECT_EQ(z.moves, 0);
  EXPECT_TRUE(z.path.empty());
}

TEST(Solver, StateCapGivesLimitExceeded) {
  Puzzle p = corner_board(1, 1);
  SolveOptions o;
  o.max_states = 3;
  const SolveResult r = solve(p, o);
  EXPECT_EQ(r.status, SolveResult::Status::kLimitExceeded);
  EXPECT_FALSE(r.solved());
  EXPECT_EQ(r.moves, -1);
  EXPECT_EQ(r.states_explored, 3);
}

TEST(Solver, SingleColorTilesAreInterchangeable) {
  // Two tiles, right then nothing: T T . . -> . . T T, targets at (0,2), (0,3).
  const Puzzle p = board("size 4\nboard\nTTxx\n....\n....\n....\nend\n");
  EXPECT_EQ(solve(p).moves, 1);
  // Multi-color with crossed targets: on an open board the pair only ever shifts between
  // the four corners' horizontal pairs with A left of B (4 configurations), so it is
  // unsolvable although the single-color version takes 1 move.
  const Puzzle m = board("size 4\ncolors multi\nboard\nABba\n....\n....\n....\nend\n");
  const SolveResult r = solve(m);
  EXPECT_EQ(r.status, SolveResult::Status::kUnsolvable);
  EXPECT_EQ(r.states_explored, 4);
}

// Shortest solution by trying every move sequence up to `depth`; -1 if none.
int brute_force(const Puzzle& p, int depth) {
  std::function<bool(const PuzzleState&, int)> dfs = [&](const PuzzleState& s, int left) {
    if (is_solved(p, s)) return true;
    if (left == 0) return false;
    for (int m = 0; m < 4; ++m) {
      PuzzleState t = s;
      if (apply_move(p, t, m) && dfs(t, left - 1)) return true;
    }
    return false;
  };
  for (int d = 0; d <= depth; ++d)
    if (dfs(initial_state(p), d)) return d;
  return -1;
}

TEST(Solver, MatchesBruteForceOnRandomPuzzles) {
  std::mt19937_64 rng(42);
  for (bool multi : {false, true}) {
    const GeneratorSpec spec =
        generator_spec_with({{"size", 4}, {"tiles", 2}, {"multi_color", multi}, {"max_moves", 5}});
    for (int k = 0; k < 25; ++k) {
      const Puzzle p = generate_puzzle(spec, rng);
      EXPECT_EQ(brute_force(p, 6), p.optimal) << render(p, p.tiles);
      EXPECT_EQ(solve(p).moves, p.optimal);
    }
  }
}

TEST(Generator, PuzzlesAreSolvableWithStatedOptimalAndRespectSpec) {
  for (bool multi : {false, true}) {
    const GeneratorSpec spec = generator_spec_with({{"size", 6}, {"tiles", 3}, {"blocked_density", 0.2},
                                                    {"multi_color", multi}, {"min_moves", 3}, {"max_moves", 7}});
    std::mt19937_64 rng(multi ? 9 : 8);
    int blocked = 0;
    std::vector<int> seen(8, 0);
    for (int k = 0; k < 40; ++k) {
      const Puzzle p = generate_puzzle(spec, rng);
      EXPECT_NO_THROW(validate(p));
      EXPECT_EQ(p.size, 6);
      EXPECT_EQ(p.multi_color, multi);
      EXPECT_EQ(p.tiles.size(), 3u);
      ASSERT_GE(p.optimal, 3);
      ASSERT_LE(p.optimal, 7);
      ++seen[p.optimal];
      const SolveResult r = solve(p);
      ASSERT_TRUE(r.solved());
      EXPECT_EQ(r.moves, p.optimal);
      for (uint8_t b : p.blocked) blocked += b;
    }
    const double density = blocked / (40.0 * 36);
    EXPECT_GT(density, 0.1);
    EXPECT_LT(density, 0.3);
    for (int d = 3; d <= 7; ++d) EXPECT_GT(seen[d], 0) << "no puzzle of length " << d;
  }
}

TEST(Generator, DeterministicPerSeed) {
  const GeneratorSpec spec = generator_spec_with({{"tiles", 2}});
  std::mt19937_64 a(123), b(123), c(124);
  std::vector<Puzzle> pa, pb, pc;
  for (int k = 0; k < 10; ++k) {
    pa.push_back(generate_puzzle(spec, a));
    pb.push_back(generate_puzzle(spec, b));
    pc.push_back(generate_puzzle(spec, c));
  }
  EXPECT_EQ(pa, pb);
  EXPECT_NE(pa, pc);
}

TEST(Generator, RejectsBadSpecsAndReportsImpossibleOnes) {
  std::mt19937_64 rng(1);
  // Specs the config table would refuse: the default spec with one field out of range.
  const GeneratorSpec defaults = generator_spec_with();
  GeneratorSpec s = defaults;
  s.size = 1;
  EXPECT_THROW(generate_puzzle(s, rng), std::invalid_argument);
  s = defaults;
  s.tiles = 0;
  EXPECT_THROW(generate_puzzle(s, rng), std::invalid_argument);
  s = defaults;
  s.min_moves = 5;
  s.max_moves = 4;
  EXPECT_THROW(generate_puzzle(s, rng), std::invalid_argument);
  s = defaults;
  s.blocked_density = 0.95;
  EXPECT_THROW(generate_puzzle(s, rng), std::invalid_argument);
  // A 2x2 board with one tile has at most 3 reachable cells: no 10-move puzzle exists.
  s = generator_spec_with({{"size", 2}, {"tiles", 1}, {"blocked_density", 0.0}, {"min_moves", 10}, {"max_moves", 12}});
  s.max_attempts = 20;
  try {
    generate_puzzle(s, rng);
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("after 20 attempts"), std::string::npos) << e.what();
  }
}

CurriculumOptions curriculum_options(int window, double threshold) {
  CurriculumOptions o;
  o.start_level = 1;
  o.window = window;
  o.threshold = threshold;
  o.seed = 3;
  return o;
}

TEST(Curriculum, AdmitsHarderPuzzlesOnlyAfterHighSolveRate) {
  const GeneratorSpec spec = generator_spec_with({{"size", 5}, {"tiles", 2}, {"min_moves", 1}, {"max_moves", 6}});
  Curriculum c(spec, curriculum_options(20, 0.8));
  EXPECT_EQ(c.level(), 1);
  EXPECT_EQ(c.max_level(), 6);
  for (int k = 0; k < 30; ++k) EXPECT_EQ(c.next().optimal, 1);
  for (int k = 0; k < 19; ++k) c.report(true);
  EXPECT_EQ(c.level(), 1);  // window not full yet
  EXPECT_EQ(c.window_count(), 19);
  c.report(false);          // 19/20 = 0.95 >= 0.8
  EXPECT_EQ(c.level(), 2);
  EXPECT_EQ(c.window_count(), 0);
  std::vector<int> seen(7, 0);
  for (int k = 0; k < 60; ++k) {
    const int opt = c.next().optimal;
    ASSERT_GE(opt, 1);
    ASSERT_LE(opt, 2);
    ++seen[opt];
  }
  EXPECT_GT(seen[2], 0);  // harder ones admitted, easier ones still drawn
  EXPECT_GT(seen[1], 0);
  // A low solve rate keeps the level: 15/20 = 0.75 < 0.8, over many windows.
  for (int k = 0; k < 200; ++k) c.report(k % 4 != 0);
  EXPECT_EQ(c.level(), 2);
  EXPECT_NEAR(c.solve_rate(), 0.75, 1e-9);
  // The moving window: one more success drops the oldest report (a failure, k = 180) and
  // makes it 16/20 = 0.8.
  c.report(true);
  EXPECT_EQ(c.level(), 3);
}

TEST(Curriculum, MovingWindowAndTopLevel) {
  const GeneratorSpec spec = generator_spec_with({{"size", 4}, {"min_moves", 1}, {"max_moves", 2}});
  Curriculum c(spec, curriculum_options(10, 0.7));
  for (int k = 0; k < 10; ++k) c.report(false);
  EXPECT_EQ(c.level(), 1);
  for (int k = 0; k < 6; ++k) c.report(true);  // window: 4 fails, 6 wins = 0.6
  EXPECT_EQ(c.level(), 1);
  c.report(true);  // 3 fails, 7 wins = 0.7
  EXPECT_EQ(c.level(), 2);
  for (int k = 0; k < 50; ++k) c.report(true);
  EXPECT_EQ(c.level(), 2);  // the top
}

TEST(Curriculum, PoolLevelsSkipMissingLengthsAndDeterminism) {
  std::vector<Puzzle> pool = {corner_board(0, 3), corner_board(0, 1), corner_board(3, 0),
                              corner_board(1, 1) /* unsolvable: dropped */};
  Curriculum c(pool, curriculum_options(5, 1.0));
  EXPECT_EQ(c.min_level(), 1);
  EXPECT_EQ(c.max_level(), 3);
  for (int k = 0; k < 20; ++k) EXPECT_EQ(c.next().optimal, 1);
  for (int k = 0; k < 5; ++k) c.report(true);
  EXPECT_EQ(c.level(), 3);  // no puzzle of length 2: straight to 3
  Curriculum d(pool, curriculum_options(5, 1.0));
  Curriculum e(pool, curriculum_options(5, 1.0));
  for (int k = 0; k < 5; ++k) { d.report(true); e.report(true); }
  for (int k = 0; k < 20; ++k) EXPECT_EQ(d.next(), e.next());
  EXPECT_THROW(Curriculum({corner_board(1, 1)}, curriculum_options(5, 1.0)),
               std::invalid_argument);
  EXPECT_THROW(Curriculum(pool, curriculum_options(0, 0.5)), std::invalid_argument);
}

}  // namespace
