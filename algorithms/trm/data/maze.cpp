#include "maze.hpp"

#include <algorithm>
#include <deque>
#include <stdexcept>

#include <mlh/uniform_index.hpp>

namespace trm {
namespace {

// BFS distances from `from` over non-wall cells; -1 for unreachable.
std::vector<int> bfs(const std::string& grid, int size, int from, std::vector<int>* parent = nullptr) {
  std::vector<int> dist(grid.size(), -1);
  if (parent) parent->assign(grid.size(), -1);
  std::deque<int> q{from};
  dist[static_cast<size_t>(from)] = 0;
  while (!q.empty()) {
    const int c = q.front();
    q.pop_front();
    const int r = c / size, k = c % size;
    const int next[4] = {r > 0 ? c - size : -1, r + 1 < size ? c + size : -1, k > 0 ? c - 1 : -1, k + 1 < size ? c + 1 : -1};
    for (int n : next) {
      if (n < 0 || grid[static_cast<size_t>(n)] == '#' || dist[static_cast<size_t>(n)] >= 0) continue;
      dist[static_cast<size_t>(n)] = dist[static_cast<size_t>(c)] + 1;
      if (parent) (*parent)[static_cast<size_t>(n)] = c;
      q.push_back(n);
    }
  }
  return dist;
}

int farthest(const std::vector<int>& dist) {
  return static_cast<int>(std::max_element(dist.begin(), dist.end()) - dist.begin());
}

bool find_ends(const std::string& grid, int size, int& s, int& g) {
  if (size < 1 || grid.size() != static_cast<size_t>(size) * static_cast<size_t>(size)) return false;
  s = g = -1;
  for (size_t i = 0; i < grid.size(); ++i) {
    if (grid[i] == 'S') {
      if (s >= 0) return false;
      s = static_cast<int>(i);
    } else if (grid[i] == 'G') {
      if (g >= 0) return false;
      g = static_cast<int>(i);
    }
  }
  return s >= 0 && g >= 0;
}

}  // namespace

Maze generate_maze(int size, std::mt19937_64& rng) {
  if (size < kMinMazeSize)
    throw std::invalid_argument("generate_maze: size must be >= " + std::to_string(kMinMazeSize) + ", got " +
                                std::to_string(size));
  std::string g(static_cast<size_t>(size) * size, '#');
  auto at = [&](int r, int c) -> char& { return g[static_cast<size_t>(r) * size + c]; };
  // Rooms on odd coordinates 1, 3, ..., up to size - 2; walls in between and around.
  const int rooms = (size - 1) / 2;
  std::vector<char> seen(static_cast<size_t>(rooms) * rooms, 0);
  std::vector<std::pair<int, int>> stack{{static_cast<int>(mlh::uniform_index(rng, rooms)), static_cast<int>(mlh::uniform_index(rng, rooms))}};
  seen[static_cast<size_t>(stack[0].first) * rooms + stack[0].second] = 1;
  at(2 * stack[0].first + 1, 2 * stack[0].second + 1) = ' ';
  static const int dr[4] = {-1, 1, 0, 0}, dc[4] = {0, 0, -1, 1};
  while (!stack.empty()) {
    const auto [r, c] = stack.back();
    int options[4], n = 0;
    for (int d = 0; d < 4; ++d) {
      const int nr = r + dr[d], nc = c + dc[d];
      if (nr >= 0 && nr < rooms && nc >= 0 && nc < rooms && !seen[static_cast<size_t>(nr) * rooms + nc]) options[n++] = d;
    }
    if (!n) {
      stack.pop_back();
      continue;
    }
    const int d = options[mlh::uniform_index(rng, static_cast<uint64_t>(n))];
    const int nr = r + dr[d], nc = c + dc[d];
    seen[static_cast<size_t>(nr) * rooms + nc] = 1;
    at(2 * r + 1 + dr[d], 2 * c + 1 + dc[d]) = ' ';
    at(2 * nr + 1, 2 * nc + 1) = ' ';
    stack.push_back({nr, nc});
  }
  // Extra openings: walls between two rooms (horizontally or vertically), about one in ten,
  // so that loops exist and the shortest route differs from the first one found.
  std::vector<int> between;
  for (int r = 1; r < 2 * rooms; ++r)
    for (int c = 1; c < 2 * rooms; ++c)
      if (at(r, c) == '#' && ((r % 2 == 1 && c % 2 == 0) || (r % 2 == 0 && c % 2 == 1))) between.push_back(r * size + c);
  for (int cell : between)
    if (mlh::uniform_index(rng, 10) == 0) g[static_cast<size_t>(cell)] = ' ';
  // S and G far apart: from a random room, the farthest cell, then the farthest from it.
  const int start_room = (2 * static_cast<int>(mlh::uniform_index(rng, rooms)) + 1) * size + 2 * static_cast<int>(mlh::uniform_index(rng, rooms)) + 1;
  const int a = farthest(bfs(g, size, start_room));
  const int b = farthest(bfs(g, size, a));
  const bool swap = mlh::uniform_index(rng, 2) == 1;
  g[static_cast<size_t>(swap ? b : a)] = 'S';
  g[static_cast<size_t>(swap ? a : b)] = 'G';
  Maze m;
  m.size = size;
  m.grid = g;
  m.solution = solve_maze(g, size);
  return m;
}

int shortest_path_length(const std::string& grid, int size) {
  int s, g;
  if (!find_ends(grid, size, s, g)) return -1;
  return bfs(grid, size, s)[static_cast<size_t>(g)];
}

std::string solve_maze(const std::string& grid, int size) {
  int s, g;
  if (!find_ends(grid, size, s, g)) return "";
  std::vector<int> parent;
  const auto dist = bfs(grid, size, s, &parent);
  if (dist[static_cast<size_t>(g)] < 0) return "";
  std::string out = grid;
  for (int c = parent[static_cast<size_t>(g)]; c != s; c = parent[static_cast<size_t>(c)]) out[static_cast<size_t>(c)] = 'o';
  return out;
}

std::vector<uint8_t> maze_to_tokens(const std::string& grid) {
  std::vector<uint8_t> t(grid.size());
  for (size_t i = 0; i < grid.size(); ++i) {
    const char* p = std::char_traits<char>::find(kMazeCharset, 5, grid[i]);
    if (!p) throw std::invalid_argument("maze_to_tokens: character " + std::to_string(static_cast<int>(grid[i])) + " at " + std::to_string(i) + " is not one of \"# SGo\"");
    t[i] = static_cast<uint8_t>(p - kMazeCharset + 1);
  }
  return t;
}

std::string maze_from_tokens(const std::vector<uint8_t>& tokens) {
  std::string s(tokens.size(), ' ');
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 1 || tokens[i] > 5) throw std::invalid_argument("maze_from_tokens: token " + std::to_string(tokens[i]) + " at " + std::to_string(i));
    s[i] = kMazeCharset[tokens[i] - 1];
  }
  return s;
}

Maze dihedral(const Maze& m, int k) {
  if (k < 0 || k > 7) throw std::invalid_argument("dihedral: k must be in 0..7, got " + std::to_string(k));
  const int n = m.size;
  auto map = [&](const std::string& src) {
    if (src.empty()) return src;
    std::string out(src.size(), '#');
    for (int r = 0; r < n; ++r)
      for (int c = 0; c < n; ++c) {
        int rr = r, cc = c;
        for (int q = 0; q < k % 4; ++q) {  // a quarter turn clockwise: (r, c) -> (c, n-1-r)
          const int t = rr;
          rr = cc;
          cc = n - 1 - t;
        }
        if (k >= 4) cc = n - 1 - cc;
        out[static_cast<size_t>(rr) * n + cc] = src[static_cast<size_t>(r) * n + c];
      }
    return out;
  };
  return Maze{n, map(m.grid), map(m.solution)};
}

}  // namespace trm
