#include "level_set.hpp"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "solver.hpp"

namespace ppo {

namespace fs = std::filesystem;

namespace {

std::string with_commas(int64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

std::string board_name(const Puzzle& p) { return std::to_string(p.size) + "x" + std::to_string(p.size); }

bool is_level_file(const fs::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".txt" || ext == ".lvl";
}

}  // namespace

std::vector<Puzzle> check_levels(std::vector<LevelEntry> entries, const std::string& file, const LevelLimits& limits) {
  std::vector<Puzzle> out;
  out.reserve(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    LevelEntry& e = entries[i];
    Puzzle& p = e.puzzle;
    const std::string which = "puzzle " + std::to_string(i + 1) + " (" + board_name(p) + ")";
    if (p.size > limits.max_size)
      throw LevelError(file, e.line,
                       which + " is larger than the " + std::to_string(limits.max_size) + "x" +
                           std::to_string(limits.max_size) + " boards " + limits.max_size_why);
    SolveOptions o;
    o.max_states = limits.solver_states;
    o.want_path = false;
    const SolveResult r = solve(p, o);
    if (r.status == SolveResult::Status::kUnsolvable)
      throw LevelError(file, e.line, which + " has no solution: no sequence of moves covers its targets");
    if (r.status == SolveResult::Status::kLimitExceeded)
      throw LevelError(file, e.line,
                       which + ": the solver gave up after " + with_commas(r.states_explored) +
                           " configurations, so its optimum cannot be found or checked");
    if (r.moves == 0) throw LevelError(file, e.line, which + " is solved before its first move: nothing to play");
    if (e.optimal_line && p.optimal != r.moves)
      throw LevelError(file, e.optimal_line,
                       "optimal " + std::to_string(p.optimal) + " is wrong: the solver solves " + which + " in " +
                           std::to_string(r.moves) + " moves at best (fix the line or remove it to have it computed)");
    p.optimal = r.moves;
    if (limits.max_steps > 0 && p.optimal > limits.max_steps)
      throw LevelError(file, e.line,
                       which + " needs " + std::to_string(p.optimal) + " moves, more than the step limit of " +
                           std::to_string(limits.max_steps) + " " + limits.max_steps_why +
                           ": no episode could solve it");
    out.push_back(std::move(p));
  }
  return out;
}

LevelSet load_level_set(const std::string& path, const LevelLimits& limits) {
  LevelSet set;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) throw LevelError(path, 0, "no such file or folder");
  if (fs::is_directory(status)) {
    for (const fs::directory_entry& entry : fs::directory_iterator(path, ec))
      if (entry.is_regular_file(ec) && is_level_file(entry.path())) set.files.push_back(entry.path().string());
    if (ec) throw LevelError(path, 0, "cannot list the folder: " + ec.message());
    if (set.files.empty()) throw LevelError(path, 0, "the folder holds no level file (*.txt or *.lvl)");
    std::sort(set.files.begin(), set.files.end());
  } else {
    set.files.push_back(path);
  }
  for (const std::string& file : set.files) {
    std::vector<Puzzle> puzzles = check_levels(load_level_entries(file), file, limits);
    if (puzzles.empty()) throw LevelError(file, 0, "the file holds no puzzle");
    for (Puzzle& p : puzzles) {
      set.max_size = std::max(set.max_size, p.size);
      set.max_optimal = std::max(set.max_optimal, p.optimal);
      set.puzzles.push_back(std::move(p));
    }
  }
  return set;
}

}  // namespace ppo
