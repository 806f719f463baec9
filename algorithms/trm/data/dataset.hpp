// The reference's dataset folders (TinyRecursiveModels / HRM puzzle_dataset.py): a dataset
// folder has train/ and test/, each a "split" with dataset.json (PuzzleDatasetMetadata) and,
// per set name, <set>__inputs.npy [N, seq_len], <set>__labels.npy [N, seq_len],
// <set>__puzzle_identifiers.npy [P], <set>__puzzle_indices.npy [P+1] (example ranges of the
// puzzles) and <set>__group_indices.npy [G+1] (puzzle ranges of the groups: a group is an
// original puzzle with its augmented variants). Opening a split validates everything the
// sampler relies on, in one O(N) pass, so a bad folder fails at start with the file named
// rather than mid-training. Every problem with the files (missing, unreadable, malformed,
// inconsistent) is an mlh::DataError naming the file and what is wrong. docs/trm.md
// ("Training on your own data") describes the format for people who write their own.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "npy.hpp"

namespace trm {

struct DatasetMetadata {
  int64_t pad_id = 0;
  std::optional<int64_t> ignore_label_id;  // JSON null allowed
  int64_t blank_identifier_id = 0;
  int64_t vocab_size = 0;
  int64_t seq_len = 0;
  int64_t num_puzzle_identifiers = 0;
  int64_t total_groups = 0;
  double mean_puzzle_examples = 0;
  // Optional in older files (HRM lacks it). The reference's builders write the number of
  // groups here (build_sudoku_dataset.py: len(group_indices) - 1), so a file without it gets
  // total_groups, and has_total_puzzles says which it was.
  int64_t total_puzzles = 0;
  bool has_total_puzzles = false;
  std::vector<std::string> sets;
  // mlhost's addition, optional: the display name of each token id (token_names.hpp), empty
  // when the file has none (the reference's datasets). The reference's loader, a pydantic
  // model, ignores keys it does not know, so it still reads a file that has it.
  std::vector<std::string> token_names;
};

// Parses and validates a dataset.json text; errors (mlh::DataError) name `path` and the field.
DatasetMetadata parse_dataset_json(const std::string& text, const std::string& path);
nlohmann::json to_json(const DatasetMetadata&);

struct DatasetSet {
  std::string name;
  NpyArray inputs, labels, puzzle_identifiers, puzzle_indices, group_indices;
  int64_t num_examples() const { return inputs.ndim() == 2 ? inputs.shape()[0] : 0; }
  int64_t num_puzzles() const { return puzzle_identifiers.size(); }
  int64_t num_groups() const { return group_indices.size() - 1; }
};

class DatasetSplit {
 public:
  // Opens <split_dir>/dataset.json and every set's arrays; validates (errors name the file):
  // inputs and labels 2-D integer [N, seq_len] with the same N; puzzle_indices 1-D, from 0,
  // non-decreasing, last == N; puzzle_identifiers 1-D of length len(puzzle_indices) - 1 with
  // values in [0, num_puzzle_identifiers); group_indices 1-D, from 0, non-decreasing, last ==
  // number of puzzles; input tokens in [0, vocab_size); labels in [0, vocab_size), equal to
  // ignore_label_id, or -100. A total_groups / total_puzzles that disagrees with the arrays
  // is only recorded in warnings().
  static DatasetSplit open(const std::string& split_dir);

  const std::string& dir() const { return dir_; }
  const DatasetMetadata& metadata() const { return meta_; }
  const std::vector<DatasetSet>& sets() const { return sets_; }
  int64_t num_examples() const;  // all sets
  int64_t num_puzzles() const;
  int64_t num_groups() const;
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  std::string dir_;
  DatasetMetadata meta_;
  std::vector<DatasetSet> sets_;
  std::vector<std::string> warnings_;
};

// One set to write: examples row-major [num_examples, seq_len] token values, and the index
// arrays exactly as they will be stored (puzzle_indices starts with 0, group_indices too).
struct DatasetSetData {
  std::string name;
  std::vector<int32_t> inputs, labels;
  std::vector<int32_t> puzzle_identifiers, puzzle_indices, group_indices;
};

// Writes <split_dir>/dataset.json and the arrays of every set (the folder is created). As the
// reference stores them: inputs and labels uint8 when vocab_size <= 256 (else int32), the
// index and identifier arrays int32. metadata.sets is replaced by the names of `sets`. The
// result is reopened with DatasetSplit::open to validate it before returning.
void write_dataset_split(const std::string& split_dir, const DatasetMetadata& metadata,
                         const std::vector<DatasetSetData>& sets);

}  // namespace trm
