// Mazes for TRM's maze task, in the format of the reference's maze-30x30-hard data
// (build_maze_dataset.py): a size x size grid of the characters "# SGo" (wall, open, start,
// goal, path), row-major; the label is the grid with one shortest S-to-G path marked 'o'.
// The generator carves a randomized-DFS maze on the odd lattice, then knocks out some extra
// walls so that several routes exist (the task is the *shortest* one), and puts S and G far
// apart (the two ends of a longest shortest path found by two BFS sweeps).
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace trm {

constexpr char kMazeCharset[] = "# SGo";  // token = index + 1; 0 is pad

struct Maze {
  int size = 0;
  std::string grid, solution;  // size * size characters each
};

// The smallest maze side the generator makes (2 x 2 rooms inside the walls).
constexpr int kMinMazeSize = 5;
// size >= kMinMazeSize (else std::invalid_argument).
Maze generate_maze(int size, std::mt19937_64&);
// Steps of a shortest path from S to G through non-wall cells (4-neighbourhood); -1 when G
// cannot be reached or the grid does not hold exactly one S and one G.
int shortest_path_length(const std::string& grid, int size);
// The grid with the interior cells of one shortest S-G path marked 'o' ("" when none).
std::string solve_maze(const std::string& grid, int size);

// Tokens: pad 0, '#' 1, ' ' 2, 'S' 3, 'G' 4, 'o' 5. Other characters throw
// std::invalid_argument (as do tokens outside 1..5).
std::vector<uint8_t> maze_to_tokens(const std::string& grid);
std::string maze_from_tokens(const std::vector<uint8_t>& tokens);

// One of the 8 symmetries of the square (k = 0..7: k % 4 quarter turns, then a mirror when
// k >= 4), applied to grid and solution alike; k = 0 is the identity.
Maze dihedral(const Maze&, int k);

}  // namespace trm
