// Batches as the reference's PuzzleDataset makes them (puzzle_dataset.py). Training: per
// epoch a random order of the groups; for each group a random puzzle of it, and from that
// puzzle min(puzzle size, room left) examples without replacement, until the batch is full
// (the reference's _sample_batch). Unlike the reference, which drops the last, incomplete
// batch of an epoch, a batch that the epoch cannot fill continues into the next epoch's
// order, so every batch is full and no group is skipped. With several sets, the groups of
// all sets form one pool (a group never mixes sets), so one epoch visits every group of
// every set once. Evaluation: every example of every set once, in order, the last batch
// padded.
//
// The randomness is our own (splitmix64 seeding, mt19937_64, an unbiased bounded draw), not
// numpy's: the same seed gives the same batches on every platform, and state() captures
// the generator exactly, so a resumed run continues with the very batches it would have had.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "dataset.hpp"
#include "ignore_label.hpp"

namespace trm {


struct Batch {
  int64_t rows = 0, seq_len = 0;
  // rows * seq_len, rows * seq_len, rows; labels equal to metadata.ignore_label_id (and the
  // files' own -100) become kIgnoreLabel.
  std::vector<int32_t> inputs, labels, puzzle_identifiers;
  // Eval: rows that are real examples, the rest padding (inputs pad_id, labels kIgnoreLabel,
  // identifier blank_identifier_id). Train: always rows.
  int64_t valid = 0;
  // Per valid row: the example's index and its puzzle's index, both counted over all sets in
  // order (set 0's examples first). For tests and per-example evaluation.
  std::vector<int64_t> examples, puzzles;
};

// `rows` rows of random tokens over a sequence and vocabulary (Sudoku's by default), puzzle
// identifiers spread over a table of `puzzle_identifiers`: benchmarks and calibration time
// the model, not the data.
Batch random_batch(int64_t rows, uint64_t seed, int64_t seq_len = 81, int64_t vocab_size = 11,
                   int64_t puzzle_identifiers = 1);

// Examples, puzzles and groups of all sets in one index space, with the per-example reads
// the two batchers share.
class SplitIndex {
 public:
  explicit SplitIndex(const DatasetSplit& split);
  const DatasetSplit& split() const { return *split_; }
  int64_t num_examples() const { return puzzle_start_.back(); }
  int64_t num_puzzles() const { return static_cast<int64_t>(puzzle_start_.size()) - 1; }
  int64_t num_groups() const { return static_cast<int64_t>(group_start_.size()) - 1; }
  int64_t puzzle_begin(int64_t p) const { return puzzle_start_[static_cast<size_t>(p)]; }
  int64_t puzzle_end(int64_t p) const { return puzzle_start_[static_cast<size_t>(p) + 1]; }
  int64_t group_begin(int64_t g) const { return group_start_[static_cast<size_t>(g)]; }
  int64_t group_end(int64_t g) const { return group_start_[static_cast<size_t>(g) + 1]; }
  int32_t identifier(int64_t p) const { return identifiers_[static_cast<size_t>(p)]; }
  // Appends example `e` (global index) of puzzle `p` as a row of `b`.
  void append_row(Batch& b, int64_t e, int64_t p) const;
  // Appends a padding row.
  void append_padding(Batch& b) const;

 private:
  const DatasetSplit* split_;
  std::vector<int64_t> puzzle_start_, group_start_;  // global, with a final end entry
  std::vector<int64_t> set_first_example_;            // per set, then the total
  std::vector<int32_t> identifiers_;
  int32_t ignore_ = kIgnoreLabel;
  bool has_ignore_ = false;
};

// Rank `rank`'s share of a global batch drawn identically on every rank: rows
// [rank * rows / world, (rank + 1) * rows / world). With world 1, the batch itself.
// mlh::Error when the rows do not divide evenly.
Batch shard_rows(const Batch& global, int rank, int world);

class TrainSampler {  // infinite stream of full batches
 public:
  TrainSampler(const DatasetSplit&, int64_t batch_size, uint64_t seed);
  Batch next();
  int64_t epoch() const { return epoch_; }  // epochs of group order finished
  // For resume: {"seed", "batch_size", "epoch", "position", "rng", "num_groups"}; after
  // load_state the batches continue exactly as they would have.
  nlohmann::json state() const;
  void load_state(const nlohmann::json&);  // mlh::Error on a malformed or foreign state

 private:
  void start_epoch();
  uint64_t draw(uint64_t n);  // uniform in [0, n)

  SplitIndex index_;
  int64_t batch_size_;
  uint64_t seed_;
  int64_t epoch_ = 0, position_ = 0;
  std::vector<int64_t> order_;  // this epoch's group order
  std::mt19937_64 rng_;         // puzzle and example picks; the order has its own seed
  std::vector<int64_t> scratch_;
};

class EvalBatches {  // every example of every set once, in order, last batch padded
 public:
  EvalBatches(const DatasetSplit&, int64_t batch_size);
  bool next(Batch& out);
  int64_t total() const { return index_.num_examples(); }  // examples
  int64_t num_batches() const { return (total() + batch_size_ - 1) / batch_size_; }
  void reset() { example_ = 0; puzzle_ = 0; }

 private:
  SplitIndex index_;
  int64_t batch_size_;
  int64_t example_ = 0, puzzle_ = 0;
};

}  // namespace trm
