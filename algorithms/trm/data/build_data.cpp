#include "build_data.hpp"

#include <chrono>
#include <filesystem>
#include <limits>
#include <mlh/atomic_file.hpp>
#include <mlh/plugin.hpp>
#include <random>
#include <unordered_set>

#include "dataset.hpp"
#include "files.hpp"
#include "maze.hpp"
#include "sudoku.hpp"
#include "token_names.hpp"

namespace trm {
namespace fs = std::filesystem;
namespace {

constexpr int64_t kMaxCount = 100'000'000;
constexpr int64_t kMaxSudokuAugmentations = 10'000;

[[noreturn]] void bad_option(const std::string& option, const std::string& what) {
  throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "build-data option '" + option + "' " + what);
}

void check_range(const std::string& option, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi)
    bad_option(option, "= " + std::to_string(v) + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

// Independent streams for train and test: splitmix64 of (seed, stream).
std::mt19937_64 stream(uint64_t seed, uint64_t which) {
  uint64_t x = seed + 0x9E3779B97F4A7C15ull * (which + 1);
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return std::mt19937_64(x ^ (x >> 31));
}

// Accumulates one set in the reference's layout: a group per original, a puzzle of one
// example per variant.
struct SetBuilder {
  DatasetSetData data;
  int64_t puzzles = 0, examples = 0;
  SetBuilder() {
    data.name = "all";
    data.puzzle_indices.push_back(0);
    data.group_indices.push_back(0);
  }
  template <typename Tokens>
  void add_example(const Tokens& in, const Tokens& out) {
    data.inputs.insert(data.inputs.end(), in.begin(), in.end());
    data.labels.insert(data.labels.end(), out.begin(), out.end());
    ++examples;
    ++puzzles;
    data.puzzle_indices.push_back(static_cast<int32_t>(examples));
    data.puzzle_identifiers.push_back(0);
  }
  void end_group() { data.group_indices.push_back(static_cast<int32_t>(puzzles)); }
  int64_t groups() const { return static_cast<int64_t>(data.group_indices.size()) - 1; }
};

void write_split(const std::string& dir, const SetBuilder& b, int64_t vocab_size, int64_t seq_len,
                 std::vector<std::string> token_names) {
  DatasetMetadata m;
  m.pad_id = 0;
  m.ignore_label_id = 0;
  m.blank_identifier_id = 0;
  m.vocab_size = vocab_size;
  m.seq_len = seq_len;
  m.num_puzzle_identifiers = 1;
  m.total_groups = b.groups();
  m.mean_puzzle_examples = 1;
  m.total_puzzles = b.groups();  // the reference writes len(group_indices) - 1 here
  m.has_total_puzzles = true;
  m.token_names = std::move(token_names);  // what solve prints the tokens as
  write_dataset_split(dir, m, {b.data});
}

void write_identifiers(const std::string& out_dir) {
  write_text_file((fs::path(out_dir) / "identifiers.json").string(), "[\"<blank>\"]\n");
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

BuildReport build_sudoku_dataset(const std::string& out_dir, const SudokuBuildOptions& o,
                                 const std::function<void(const std::string&)>& log) {
  check_range("train_puzzles", o.train_puzzles, 1, kMaxCount);
  check_range("test_puzzles", o.test_puzzles, 1, kMaxCount);
  check_range("min_givens", o.min_givens, kMinSudokuGivens, kMaxSudokuGivens);
  check_range("max_givens", o.max_givens, kMinSudokuGivens, kMaxSudokuGivens);
  if (o.min_givens > o.max_givens)
    bad_option("min_givens", "= " + std::to_string(o.min_givens) + " exceeds max_givens = " + std::to_string(o.max_givens));
  check_range("augmentations", o.augmentations, 0, kMaxSudokuAugmentations);
  if (o.train_puzzles * (1 + o.augmentations) > std::numeric_limits<int32_t>::max())
    bad_option("augmentations", "= " + std::to_string(o.augmentations) + " with train_puzzles = " +
                                    std::to_string(o.train_puzzles) + " exceeds the int32 example indices");
  const auto t0 = std::chrono::steady_clock::now();
  std::unordered_set<std::string> seen;  // puzzles of both splits: test never repeats train
  BuildReport report;
  for (int split = 0; split < 2; ++split) {
    const bool train = split == 0;
    const int64_t count = train ? o.train_puzzles : o.test_puzzles;
    auto rng = stream(o.seed, static_cast<uint64_t>(split));
    SetBuilder b;
    int64_t attempts = 0;
    while (b.groups() < count) {
      if (++attempts > 2 * count + 1000) bad_option(train ? "train_puzzles" : "test_puzzles", "cannot be reached: too many repeated puzzles");
      const SudokuGrid solution = random_solution(rng);
      const int givens = o.min_givens + static_cast<int>(rng() % static_cast<uint64_t>(o.max_givens - o.min_givens + 1));
      const SudokuGrid puzzle = make_puzzle(solution, givens, rng);
      if (!seen.insert(to_string(puzzle)).second) continue;
      b.add_example(to_tokens(puzzle), to_tokens(solution));
      for (int64_t a = 0; train && a < o.augmentations; ++a) {
        const SudokuPair v = augment({puzzle, solution}, rng);
        b.add_example(to_tokens(v.puzzle), to_tokens(v.solution));
      }
      b.end_group();
      if (log && b.groups() % 10000 == 0)
        log(std::string(train ? "train" : "test") + ": " + std::to_string(b.groups()) + " / " + std::to_string(count) + " puzzles");
    }
    make_dir(out_dir);
    write_split((fs::path(out_dir) / (train ? "train" : "test")).string(), b, kSudokuVocabSize, kSudokuSeqLen,
                sudoku_token_names());
    (train ? report.train_examples : report.test_examples) = b.examples;
    if (log) log(std::string(train ? "train" : "test") + ": " + std::to_string(b.groups()) + " puzzles, " + std::to_string(b.examples) + " examples written");
  }
  write_identifiers(out_dir);
  report.seconds = since(t0);
  return report;
}

BuildReport build_maze_dataset(const std::string& out_dir, const MazeBuildOptions& o,
                               const std::function<void(const std::string&)>& log) {
  check_range("train_mazes", o.train_mazes, 1, kMaxCount);
  check_range("test_mazes", o.test_mazes, 1, kMaxCount);
  check_range("size", o.size, kMinMazeSize, kMaxMazeSize);
  check_range("augmentations", o.augmentations, 0, 7);
  const auto t0 = std::chrono::steady_clock::now();
  std::unordered_set<std::string> seen;
  BuildReport report;
  const int64_t seq_len = int64_t{o.size} * o.size;
  for (int split = 0; split < 2; ++split) {
    const bool train = split == 0;
    const int64_t count = train ? o.train_mazes : o.test_mazes;
    auto rng = stream(o.seed, static_cast<uint64_t>(split));
    SetBuilder b;
    int64_t attempts = 0;
    while (b.groups() < count) {
      // Small mazes have few distinct layouts: give up rather than loop forever.
      if (++attempts > 20 * count + 1000) bad_option(train ? "train_mazes" : "test_mazes", "cannot be reached: too many repeated mazes for size " + std::to_string(o.size));
      const Maze m = generate_maze(o.size, rng);
      if (!seen.insert(m.grid).second) continue;
      b.add_example(maze_to_tokens(m.grid), maze_to_tokens(m.solution));
      for (int64_t a = 1; train && a <= o.augmentations; ++a) {
        const Maze v = dihedral(m, static_cast<int>(a));
        b.add_example(maze_to_tokens(v.grid), maze_to_tokens(v.solution));
      }
      b.end_group();
      if (log && b.groups() % 10000 == 0)
        log(std::string(train ? "train" : "test") + ": " + std::to_string(b.groups()) + " / " + std::to_string(count) + " mazes");
    }
    make_dir(out_dir);
    write_split((fs::path(out_dir) / (train ? "train" : "test")).string(), b, kMazeVocabSize, seq_len,
                maze_token_names());
    (train ? report.train_examples : report.test_examples) = b.examples;
    if (log) log(std::string(train ? "train" : "test") + ": " + std::to_string(b.groups()) + " mazes, " + std::to_string(b.examples) + " examples written");
  }
  write_identifiers(out_dir);
  report.seconds = since(t0);
  return report;
}

BuildReport build_arc_dataset(const std::string& out_dir, const ArcBuildOptions& o,
                              const std::function<void(const std::string&)>& log) {
  const arc::ArcBuildResult r = arc::build_arc(out_dir, o, log);
  if (log)
    log("arc: " + std::to_string(r.tasks) + " tasks, " + std::to_string(r.train_examples) + " train and " +
        std::to_string(r.test_examples) + " test examples, " + std::to_string(r.identifiers) + " puzzle identifiers written");
  BuildReport report;
  report.train_examples = r.train_examples;
  report.test_examples = r.test_examples;
  report.seconds = r.seconds;
  return report;
}

}  // namespace trm
