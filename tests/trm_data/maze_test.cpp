// Mazes: generated grids and their solutions (a BFS-shortest S-G path through open cells),
// the charset and tokens, the dihedral symmetries, determinism in the seed.
#include <gtest/gtest.h>

#include <set>

#include "data/maze.hpp"

namespace {

using namespace trm;

// The 'o' cells with S and G form one path of `length` steps from S to G.
void check_solution(const Maze& m) {
  const int n = m.size;
  ASSERT_EQ(m.grid.size(), static_cast<size_t>(n * n));
  ASSERT_EQ(m.solution.size(), m.grid.size());
  const int length = shortest_path_length(m.grid, n);
  ASSERT_GT(length, 0);
  int path_cells = 0;
  for (size_t i = 0; i < m.grid.size(); ++i) {
    if (m.solution[i] == 'o') {
      EXPECT_EQ(m.grid[i], ' ') << "path through a non-open cell at " << i;
      ++path_cells;
    } else {
      EXPECT_EQ(m.solution[i], m.grid[i]);
    }
  }
  EXPECT_EQ(path_cells, length - 1);
  // Walk from S along path cells to G without revisiting: the path is connected.
  int cur = static_cast<int>(m.grid.find('S')), prev = -1, steps = 0;
  const int goal = static_cast<int>(m.grid.find('G'));
  while (cur != goal && steps <= length) {
    int next = -1, options = 0;
    const int r = cur / n, c = cur % n;
    for (int cand : {r > 0 ? cur - n : -1, r + 1 < n ? cur + n : -1, c > 0 ? cur - 1 : -1, c + 1 < n ? cur + 1 : -1}) {
      if (cand < 0 || cand == prev) continue;
      const char ch = m.solution[static_cast<size_t>(cand)];
      if (ch == 'o' || ch == 'G') {
        next = cand;
        ++options;
      }
    }
    // A shortest path touches itself nowhere else: exactly one way on.
    ASSERT_EQ(options, 1) << "at " << cur;
    ASSERT_GE(next, 0) << "path breaks at " << cur;
    prev = cur;
    cur = next;
    ++steps;
  }
  EXPECT_EQ(cur, goal);
  EXPECT_EQ(steps, length);
}

TEST(Maze, GeneratedMazesHaveShortestPathSolutions) {
  std::mt19937_64 rng(3);
  for (int size : {5, 6, 11, 30}) {
    for (int i = 0; i < 10; ++i) {
      const Maze m = generate_maze(size, rng);
      SCOPED_TRACE("size " + std::to_string(size));
      for (char ch : m.grid) EXPECT_NE(std::string("# SG").find(ch), std::string::npos);
      for (char ch : m.solution) EXPECT_NE(std::string("# SGo").find(ch), std::string::npos);
      EXPECT_EQ(std::count(m.grid.begin(), m.grid.end(), 'S'), 1);
      EXPECT_EQ(std::count(m.grid.begin(), m.grid.end(), 'G'), 1);
      check_solution(m);
      if (size == 30) {
        EXPECT_GE(shortest_path_length(m.grid, size), 20);  // far apart
      }
    }
  }
  EXPECT_THROW(generate_maze(4, rng), std::invalid_argument);
}

TEST(Maze, ExtraWallsOpenSeveralRoutes) {
  // A tree maze has exactly (open cells - 1) adjacencies; knocked-out walls add loops.
  std::mt19937_64 rng(8);
  const Maze m = generate_maze(30, rng);
  int open = 0, edges = 0;
  for (int r = 0; r < 30; ++r)
    for (int c = 0; c < 30; ++c) {
      if (m.grid[static_cast<size_t>(r * 30 + c)] == '#') continue;
      ++open;
      if (c + 1 < 30 && m.grid[static_cast<size_t>(r * 30 + c + 1)] != '#') ++edges;
      if (r + 1 < 30 && m.grid[static_cast<size_t>((r + 1) * 30 + c)] != '#') ++edges;
    }
  EXPECT_GT(edges, open - 1 + 5);
}

TEST(Maze, ShortestPathOfHandGrids) {
  // S at (1,1), G at (1,3): the direct route is blocked, around takes 6 steps.
  const std::string g = "#####"
                        "#S#G#"
                        "# # #"
                        "#   #"
                        "#####";
  EXPECT_EQ(shortest_path_length(g, 5), 6);
  EXPECT_EQ(solve_maze(g, 5), "#####"
                              "#S#G#"
                              "#o#o#"
                              "#ooo#"
                              "#####");
  std::string walled = g;
  walled[17] = '#';  // (3,2)
  EXPECT_EQ(shortest_path_length(walled, 5), -1);
  EXPECT_EQ(solve_maze(walled, 5), "");
  EXPECT_EQ(shortest_path_length(std::string(25, ' '), 5), -1);  // no S or G
  std::string two_s = g;
  two_s[16] = 'S';
  EXPECT_EQ(shortest_path_length(two_s, 5), -1);
  EXPECT_EQ(shortest_path_length(g, 6), -1);  // wrong size
}

TEST(Maze, TokensAndDeterminism) {
  EXPECT_EQ(maze_to_tokens("# SGo"), (std::vector<uint8_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(maze_from_tokens({1, 2, 3, 4, 5}), "# SGo");
  EXPECT_THROW(maze_to_tokens("x"), std::invalid_argument);
  EXPECT_THROW(maze_from_tokens({0}), std::invalid_argument);
  EXPECT_THROW(maze_from_tokens({6}), std::invalid_argument);
  std::mt19937_64 a(11), b(11), c(12);
  const Maze ma = generate_maze(30, a), mb = generate_maze(30, b), mc = generate_maze(30, c);
  EXPECT_EQ(ma.grid, mb.grid);
  EXPECT_EQ(ma.solution, mb.solution);
  EXPECT_NE(ma.grid, mc.grid);
}

TEST(Maze, DihedralSymmetries) {
  std::mt19937_64 rng(4);
  const Maze m = generate_maze(15, rng);
  std::set<std::string> grids;
  for (int k = 0; k < 8; ++k) {
    const Maze t = dihedral(m, k);
    grids.insert(t.grid);
    check_solution(t);
    EXPECT_EQ(shortest_path_length(t.grid, 15), shortest_path_length(m.grid, 15));
  }
  EXPECT_EQ(dihedral(m, 0).grid, m.grid);
  EXPECT_EQ(grids.size(), 8u);  // S and G placement makes the 8 images distinct
  // Four quarter turns are the identity; a mirror twice too.
  Maze r = m;
  for (int i = 0; i < 4; ++i) r = dihedral(r, 1);
  EXPECT_EQ(r.grid, m.grid);
  EXPECT_EQ(dihedral(dihedral(m, 4), 4).solution, m.solution);
  EXPECT_THROW(dihedral(m, 8), std::invalid_argument);
}

}  // namespace
