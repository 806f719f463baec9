#include "level_file.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

namespace ppo {

LevelError::LevelError(const std::string& file, int line, const std::string& what)
    : std::runtime_error(file + ":" + std::to_string(line) + ": " + what), file_(file),
      line_(line), problem_(what) {}

namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

bool parse_int(const std::string& s, int& out) {
  if (s.empty() || s.size() > 9) return false;
  size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size()) return false;
  for (size_t k = i; k < s.size(); ++k)
    if (s[k] < '0' || s[k] > '9') return false;
  out = std::stoi(s);
  return true;
}

struct Pending {
  int size = 0, size_line = 0;
  bool multi = false, colors_set = false;
  int optimal = -1;
  int optimal_line = 0;  // 0: no `optimal` key
  struct Covered { int row, col, color, line; };
  std::vector<Covered> covered;
  int first_line = 0;  // first key line of this puzzle
  bool any() const { return first_line != 0; }
};

// A board's pieces as its rows give them: multi-color tiles and targets by color (with the
// line each is on), single-color ones in reading order.
struct BoardCells {
  std::map<int, int> tiles, targets;  // color -> cell
  std::map<int, int> tile_line, target_line;
  std::vector<int> single_tiles, single_targets;
};

// One pass over a level file: keys fill the pending puzzle, `board` reads its rows and 'end',
// pairs its tiles with their targets and adds the puzzle. Every error names the line.
class LevelParser {
 public:
  LevelParser(const std::string& text, const std::string& source) : in_(text), source_(source) {}

  std::vector<LevelEntry> parse() {
    std::string raw;
    while (std::getline(in_, raw)) {
      ++line_no_;
      const std::string line = trim(raw);
      if (line.empty() || line[0] == '#') continue;
      std::istringstream words(line);
      std::string key;
      words >> key;
      std::vector<std::string> args;
      for (std::string w; words >> w;) args.push_back(w);
      if (!cur_.any()) cur_.first_line = line_no_;
      read_key(key, args);
    }
    if (cur_.any()) fail(cur_.first_line, "puzzle without a board (keys from here on)");
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(int line, const std::string& what) const { throw LevelError(source_, line, what); }

  void want_args(const std::string& key, const std::vector<std::string>& args, size_t n) const {
    if (args.size() != n)
      fail(line_no_, "'" + key + "' takes " + std::to_string(n) + " value(s), got " + std::to_string(args.size()));
  }

  void read_key(const std::string& key, const std::vector<std::string>& args) {
    if (key == "size") {
      want_args(key, args, 1);
      if (cur_.size_line) fail(line_no_, "duplicate 'size' (first on line " + std::to_string(cur_.size_line) + ")");
      if (!parse_int(args[0], cur_.size)) fail(line_no_, "size '" + args[0] + "' is not a number");
      if (cur_.size < kMinPuzzleSize || cur_.size > kMaxPuzzleSize)
        fail(line_no_, "size " + args[0] + " out of range [" + std::to_string(kMinPuzzleSize) + ", " +
                           std::to_string(kMaxPuzzleSize) + "]");
      cur_.size_line = line_no_;
    } else if (key == "colors") {
      want_args(key, args, 1);
      if (cur_.colors_set) fail(line_no_, "duplicate 'colors'");
      if (args[0] == "single") cur_.multi = false;
      else if (args[0] == "multi") cur_.multi = true;
      else fail(line_no_, "colors must be 'single' or 'multi', got '" + args[0] + "'");
      cur_.colors_set = true;
    } else if (key == "optimal") {
      want_args(key, args, 1);
      if (cur_.optimal_line) fail(line_no_, "duplicate 'optimal'");
      if (!parse_int(args[0], cur_.optimal) || cur_.optimal < 0)
        fail(line_no_, "optimal '" + args[0] + "' is not a non-negative number");
      cur_.optimal_line = line_no_;
    } else if (key == "covered") {
      want_args(key, args, 3);
      Pending::Covered c{};
      if (!parse_int(args[0], c.row) || !parse_int(args[1], c.col))
        fail(line_no_, "covered: row and column must be numbers");
      if (args[2].size() != 1 || args[2][0] < 'a' || args[2][0] >= 'a' + kMaxTiles)
        fail(line_no_, "covered: target letter must be one of a.." +
                           std::string(1, static_cast<char>('a' + kMaxTiles - 1)) + ", got '" + args[2] + "'");
      c.color = args[2][0] - 'a';
      c.line = line_no_;
      cur_.covered.push_back(c);
    } else if (key == "board") {
      want_args(key, args, 0);
      read_board();
    } else if (key == "end") {
      fail(line_no_, "'end' without 'board'");
    } else {
      fail(line_no_, "unknown key '" + key + "'");
    }
  }

  void read_board() {
    if (!cur_.size_line) fail(line_no_, "board before 'size'");
    const int board_line = line_no_;
    Puzzle p;
    p.size = cur_.size;
    p.multi_color = cur_.multi;
    p.optimal = cur_.optimal;
    p.blocked.assign(cur_.size * cur_.size, 0);
    BoardCells cells;
    read_rows(p, cells);
    std::string raw;
    if (!std::getline(in_, raw)) fail(line_no_, "unterminated board: missing 'end'");
    ++line_no_;
    if (trim(raw) != "end")
      fail(line_no_, "expected 'end' after " + std::to_string(cur_.size) + " board rows, got '" + trim(raw) + "'");
    if (cur_.multi) pair_by_color(p, cells, board_line);
    else pair_in_order(p, cells, board_line);
    canonicalize(p);
    try {
      validate(p);
    } catch (const std::invalid_argument& e) {
      fail(board_line, e.what());
    }
    out_.push_back(LevelEntry{std::move(p), cur_.first_line, cur_.optimal_line});
    cur_ = Pending{};
  }

  // The board's `size` rows: walls into `p`, tiles and targets into `cells`.
  void read_rows(Puzzle& p, BoardCells& cells) {
    const int n = cur_.size;
    std::string raw;
    for (int r = 0; r < n; ++r) {
      if (!std::getline(in_, raw))
        fail(line_no_, "unterminated board: end of file after " + std::to_string(r) + " of " + std::to_string(n) +
                           " rows");
      ++line_no_;
      std::string row = raw;
      while (!row.empty() && (row.back() == '\r' || row.back() == ' ' || row.back() == '\t')) row.pop_back();
      if (row == "end") fail(line_no_, "board has " + std::to_string(r) + " rows, expected " + std::to_string(n));
      if (static_cast<int>(row.size()) != n)
        fail(line_no_, "bad row length " + std::to_string(row.size()) + ", expected " + std::to_string(n));
      // Columns counted from 1, as lines are (and as editors show them).
      for (int c = 0; c < n; ++c) read_cell(row[c], r * n + c, c + 1, p, cells);
    }
  }

  void read_cell(char ch, int cell, int column, Puzzle& p, BoardCells& cells) {
    auto unknown = [&] {
      fail(line_no_, std::string("unknown character '") + ch + "' at column " + std::to_string(column) + " in a " +
                         (cur_.multi ? "multi" : "single") + "-color board");
    };
    if (ch == '#') {
      p.blocked[cell] = 1;
    } else if (ch == '.') {
    } else if (!cur_.multi) {
      if (ch == 'T' || ch == '*') cells.single_tiles.push_back(cell);
      if (ch == 'x' || ch == '*') cells.single_targets.push_back(cell);
      if (ch != 'T' && ch != 'x' && ch != '*') unknown();
    } else if (ch >= 'A' && ch < 'A' + kMaxTiles) {
      if (!cells.tiles.emplace(ch - 'A', cell).second)
        fail(line_no_, std::string("tile '") + ch + "' appears twice (first on line " +
                           std::to_string(cells.tile_line[ch - 'A']) + ")");
      cells.tile_line[ch - 'A'] = line_no_;
    } else if (ch >= 'a' && ch < 'a' + kMaxTiles) {
      if (!cells.targets.emplace(ch - 'a', cell).second)
        fail(line_no_, std::string("target '") + ch + "' appears twice (first on line " +
                           std::to_string(cells.target_line[ch - 'a']) + ")");
      cells.target_line[ch - 'a'] = line_no_;
    } else {
      unknown();
    }
  }

  // Single-color: the k-th tile and the k-th target in reading order make a pair.
  void pair_in_order(Puzzle& p, const BoardCells& cells, int board_line) const {
    if (!cur_.covered.empty()) fail(cur_.covered[0].line, "'covered' is only for multi-color boards");
    if (cells.single_tiles.size() != cells.single_targets.size())
      fail(board_line, "tile/target count mismatch: " + std::to_string(cells.single_tiles.size()) + " tiles, " +
                           std::to_string(cells.single_targets.size()) + " targets");
    p.tiles = cells.single_tiles;
    p.targets = cells.single_targets;
  }

  // Multi-color: tile 'A' goes to target 'a' (under a tile: a `covered` line), the letters in use
  // the first k.
  void pair_by_color(Puzzle& p, BoardCells& cells, int board_line) const {
    const int n = cur_.size;
    for (const auto& c : cur_.covered) {
      if (c.row < 0 || c.row >= n || c.col < 0 || c.col >= n)
        fail(c.line, "covered cell (" + std::to_string(c.row) + "," + std::to_string(c.col) + ") outside the " +
                         std::to_string(n) + "x" + std::to_string(n) + " board");
      const int cell = c.row * n + c.col;
      bool under_tile = false;
      for (const auto& t : cells.tiles) under_tile |= t.second == cell;
      if (!under_tile)
        fail(c.line, "covered cell (" + std::to_string(c.row) + "," + std::to_string(c.col) + ") has no tile on it");
      if (!cells.targets.emplace(c.color, cell).second)
        fail(c.line, std::string("target '") + static_cast<char>('a' + c.color) + "' appears twice");
    }
    const int k = static_cast<int>(cells.tiles.size());
    if (cells.tiles.size() != cells.targets.size())
      fail(board_line, "tile/target count mismatch: " + std::to_string(cells.tiles.size()) + " tiles, " +
                           std::to_string(cells.targets.size()) + " targets");
    for (int i = 0; i < k; ++i) {
      if (!cells.tiles.count(i))
        fail(board_line, std::string("tiles must use the first ") + std::to_string(k) + " letters; tile '" +
                             static_cast<char>('A' + i) + "' missing");
      if (!cells.targets.count(i))
        fail(board_line, std::string("target '") + static_cast<char>('a' + i) + "' missing for tile '" +
                             static_cast<char>('A' + i) + "'");
      p.tiles.push_back(cells.tiles[i]);
      p.targets.push_back(cells.targets[i]);
    }
  }

  std::istringstream in_;
  std::string source_;
  int line_no_ = 0;
  Pending cur_;
  std::vector<LevelEntry> out_;
};

}  // namespace

std::vector<LevelEntry> parse_level_entries(const std::string& text, const std::string& source) {
  return LevelParser(text, source).parse();
}

std::vector<LevelEntry> load_level_entries(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw LevelError(path, 0, "cannot open level file");
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) throw LevelError(path, 0, "cannot read level file");
  return parse_level_entries(ss.str(), path);
}

namespace {

std::vector<Puzzle> puzzles_of(std::vector<LevelEntry> entries) {
  std::vector<Puzzle> out;
  out.reserve(entries.size());
  for (LevelEntry& e : entries) out.push_back(std::move(e.puzzle));
  return out;
}

}  // namespace

std::vector<Puzzle> parse_levels(const std::string& text, const std::string& source) {
  return puzzles_of(parse_level_entries(text, source));
}

std::vector<Puzzle> load_levels(const std::string& path) { return puzzles_of(load_level_entries(path)); }

std::string format_level(const Puzzle& p) {
  validate(p);
  std::ostringstream o;
  o << "size " << p.size << "\n";
  o << "colors " << (p.multi_color ? "multi" : "single") << "\n";
  if (p.optimal >= 0) o << "optimal " << p.optimal << "\n";
  std::string grid(p.num_cells(), '.');
  for (int c = 0; c < p.num_cells(); ++c)
    if (p.blocked[c]) grid[c] = '#';
  const int k = static_cast<int>(p.tiles.size());
  if (!p.multi_color) {
    for (int c : p.targets) grid[c] = 'x';
    for (int c : p.tiles) grid[c] = grid[c] == 'x' ? '*' : 'T';
  } else {
    for (int i = 0; i < k; ++i) grid[p.targets[i]] = static_cast<char>('a' + i);
    std::vector<std::pair<int, int>> covered;  // cell, color
    for (int i = 0; i < k; ++i) {
      const int c = p.tiles[i];
      if (grid[c] >= 'a' && grid[c] <= 'z') covered.emplace_back(c, grid[c] - 'a');
      grid[c] = static_cast<char>('A' + i);
    }
    std::sort(covered.begin(), covered.end());
    for (const auto& c : covered)
      o << "covered " << c.first / p.size << " " << c.first % p.size << " "
        << static_cast<char>('a' + c.second) << "\n";
  }
  o << "board\n";
  for (int r = 0; r < p.size; ++r) o << grid.substr(r * p.size, p.size) << "\n";
  o << "end\n";
  return o.str();
}

std::string format_levels(const std::vector<Puzzle>& puzzles) {
  std::string s;
  for (size_t i = 0; i < puzzles.size(); ++i) {
    if (i) s += "\n";
    s += format_level(puzzles[i]);
  }
  return s;
}

void save_levels(const std::string& path, const std::vector<Puzzle>& puzzles) {
  const std::string text = format_levels(puzzles);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw LevelError(path, 0, "cannot write level file");
  f << text;
  f.flush();
  if (!f) throw LevelError(path, 0, "error writing level file");
}

}  // namespace ppo
