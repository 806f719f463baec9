#include "sampler.hpp"

#include <algorithm>
#include <random>
#include <sstream>

#include <mlh/plugin.hpp>
#include <mlh/uniform_index.hpp>

namespace trm {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

[[noreturn]] void bad_state(const std::string& what) {
  throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "train sampler state: " + what);
}

}  // namespace

// ---- SplitIndex

SplitIndex::SplitIndex(const DatasetSplit& split) : split_(&split) {
  puzzle_start_.push_back(0);
  group_start_.push_back(0);
  set_first_example_.push_back(0);
  int64_t examples = 0, puzzles = 0;
  for (const auto& s : split.sets()) {
    // Validated by DatasetSplit::open: from 0, non-decreasing, ending at N and P.
    for (int64_t i = 1; i < s.puzzle_indices.size(); ++i) puzzle_start_.push_back(examples + s.puzzle_indices.as_int64(i));
    for (int64_t i = 1; i < s.group_indices.size(); ++i) group_start_.push_back(puzzles + s.group_indices.as_int64(i));
    for (int64_t i = 0; i < s.puzzle_identifiers.size(); ++i)
      identifiers_.push_back(static_cast<int32_t>(s.puzzle_identifiers.as_int64(i)));
    examples += s.num_examples();
    puzzles += s.num_puzzles();
    set_first_example_.push_back(examples);
  }
  const auto& m = split.metadata();
  if (m.ignore_label_id) {
    has_ignore_ = true;
    ignore_ = static_cast<int32_t>(*m.ignore_label_id);
  }
}

void SplitIndex::append_row(Batch& b, int64_t e, int64_t p) const {
  const size_t set = static_cast<size_t>(
      std::upper_bound(set_first_example_.begin(), set_first_example_.end(), e) - set_first_example_.begin() - 1);
  const DatasetSet& s = split_->sets()[set];
  const int64_t local = e - set_first_example_[set];
  const int64_t L = b.seq_len;
  const size_t at = b.inputs.size();
  b.inputs.resize(at + static_cast<size_t>(L));
  b.labels.resize(at + static_cast<size_t>(L));
  s.inputs.copy_int32(local * L, L, b.inputs.data() + at);
  s.labels.copy_int32(local * L, L, b.labels.data() + at);
  for (size_t k = at; k < at + static_cast<size_t>(L); ++k)
    if (b.labels[k] == kIgnoreLabel || (has_ignore_ && b.labels[k] == ignore_)) b.labels[k] = kIgnoreLabel;
  b.puzzle_identifiers.push_back(identifier(p));
  b.examples.push_back(e);
  b.puzzles.push_back(p);
  ++b.valid;
}

void SplitIndex::append_padding(Batch& b) const {
  const auto& m = split_->metadata();
  b.inputs.insert(b.inputs.end(), static_cast<size_t>(b.seq_len), static_cast<int32_t>(m.pad_id));
  b.labels.insert(b.labels.end(), static_cast<size_t>(b.seq_len), kIgnoreLabel);
  b.puzzle_identifiers.push_back(static_cast<int32_t>(m.blank_identifier_id));
}

// ---- TrainSampler

TrainSampler::TrainSampler(const DatasetSplit& split, int64_t batch_size, uint64_t seed)
    : index_(split), batch_size_(batch_size), seed_(seed), rng_(splitmix64(seed ^ 0x5452'4D5F'5049'434Bull)) {
  if (batch_size < 1) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "train sampler: batch_size must be >= 1, got " + std::to_string(batch_size));
  if (index_.num_examples() == 0 || index_.num_groups() == 0)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "train sampler: dataset '" + split.dir() + "' has no examples");
  start_epoch();
}

void TrainSampler::start_epoch() {
  // The order of epoch k depends on (seed, k) only, so a resumed sampler rebuilds it.
  std::mt19937_64 order_rng(splitmix64(seed_ + splitmix64(static_cast<uint64_t>(epoch_))));
  order_.resize(static_cast<size_t>(index_.num_groups()));
  for (size_t i = 0; i < order_.size(); ++i) order_[i] = static_cast<int64_t>(i);
  for (size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[mlh::uniform_index(order_rng, i)]);
  position_ = 0;
}

uint64_t TrainSampler::draw(uint64_t n) { return mlh::uniform_index(rng_, n); }

Batch shard_rows(const Batch& global, int rank, int world) {
  if (world <= 1) return global;
  if (global.rows % world != 0)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "a batch of " + std::to_string(global.rows) +
                                                   " rows does not split evenly among " + std::to_string(world) + " ranks");
  const int64_t rows = global.rows / world, first = rows * rank;
  Batch b;
  b.rows = rows;
  b.seq_len = global.seq_len;
  b.valid = std::max<int64_t>(0, std::min(global.valid - first, rows));
  auto slice = [&](const auto& v, int64_t per_row, auto& out) {
    if (v.empty()) return;
    out.assign(v.begin() + first * per_row, v.begin() + (first + rows) * per_row);
  };
  slice(global.inputs, global.seq_len, b.inputs);
  slice(global.labels, global.seq_len, b.labels);
  slice(global.puzzle_identifiers, 1, b.puzzle_identifiers);
  // examples and puzzles are per valid row
  const int64_t take = b.valid;
  if (take > 0 && static_cast<int64_t>(global.examples.size()) >= first + take) {
    b.examples.assign(global.examples.begin() + first, global.examples.begin() + first + take);
    if (static_cast<int64_t>(global.puzzles.size()) >= first + take)
      b.puzzles.assign(global.puzzles.begin() + first, global.puzzles.begin() + first + take);
  }
  return b;
}

Batch TrainSampler::next() {
  Batch b;
  b.rows = batch_size_;
  b.seq_len = index_.split().metadata().seq_len;
  b.inputs.reserve(static_cast<size_t>(b.rows * b.seq_len));
  b.labels.reserve(static_cast<size_t>(b.rows * b.seq_len));
  while (b.valid < batch_size_) {
    const int64_t g = order_[static_cast<size_t>(position_)];
    if (++position_ == static_cast<int64_t>(order_.size())) {
      ++epoch_;
      start_epoch();
    }
    const int64_t gb = index_.group_begin(g), ge = index_.group_end(g);
    if (gb == ge) continue;  // a group without puzzles (valid, if odd) gives nothing
    const int64_t p = gb + static_cast<int64_t>(draw(static_cast<uint64_t>(ge - gb)));
    const int64_t first = index_.puzzle_begin(p), size = index_.puzzle_end(p) - first;
    const int64_t take = std::min(size, batch_size_ - b.valid);
    if (take == 0) continue;
    // `take` distinct examples of the puzzle: a partial Fisher-Yates shuffle.
    scratch_.resize(static_cast<size_t>(size));
    for (int64_t i = 0; i < size; ++i) scratch_[static_cast<size_t>(i)] = i;
    for (int64_t i = 0; i < take; ++i) {
      const int64_t j = i + static_cast<int64_t>(draw(static_cast<uint64_t>(size - i)));
      std::swap(scratch_[static_cast<size_t>(i)], scratch_[static_cast<size_t>(j)]);
      index_.append_row(b, first + scratch_[static_cast<size_t>(i)], p);
    }
  }
  return b;
}

nlohmann::json TrainSampler::state() const {
  std::ostringstream rng;
  rng << rng_;
  return {{"seed", seed_}, {"batch_size", batch_size_}, {"epoch", epoch_}, {"position", position_},
          {"num_groups", index_.num_groups()}, {"rng", rng.str()}};
}

void TrainSampler::load_state(const nlohmann::json& j) {
  if (!j.is_object()) bad_state("expected a JSON object");
  for (const char* k : {"seed", "batch_size", "epoch", "position", "num_groups"})
    if (!j.contains(k) || !j.at(k).is_number_integer()) bad_state("field '" + std::string(k) + "' missing or not an integer");
  if (!j.contains("rng") || !j.at("rng").is_string()) bad_state("field 'rng' missing or not a string");
  if (j.at("num_groups").get<int64_t>() != index_.num_groups())
    bad_state("field 'num_groups' is " + j.at("num_groups").dump() + ", this dataset has " + std::to_string(index_.num_groups()) +
              " groups (a different dataset)");
  if (j.at("batch_size").get<int64_t>() != batch_size_)
    bad_state("field 'batch_size' is " + j.at("batch_size").dump() + ", this sampler's is " + std::to_string(batch_size_));
  const int64_t epoch = j.at("epoch").get<int64_t>(), position = j.at("position").get<int64_t>();
  if (epoch < 0) bad_state("field 'epoch' is negative");
  if (position < 0 || position >= index_.num_groups()) bad_state("field 'position' is out of range");
  std::istringstream in(j.at("rng").get<std::string>());
  std::mt19937_64 rng;
  in >> rng;
  if (in.fail()) bad_state("field 'rng' is not a generator state");
  in >> std::ws;
  if (!in.eof()) bad_state("field 'rng' has trailing text");
  seed_ = j.at("seed").is_number_unsigned() ? j.at("seed").get<uint64_t>() : static_cast<uint64_t>(j.at("seed").get<int64_t>());
  epoch_ = epoch;
  rng_ = rng;
  start_epoch();
  position_ = position;
}

// ---- EvalBatches

EvalBatches::EvalBatches(const DatasetSplit& split, int64_t batch_size) : index_(split), batch_size_(batch_size) {
  if (batch_size < 1) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "eval batches: batch_size must be >= 1, got " + std::to_string(batch_size));
}

bool EvalBatches::next(Batch& b) {
  if (example_ >= index_.num_examples()) return false;
  b = Batch{};
  b.rows = batch_size_;
  b.seq_len = index_.split().metadata().seq_len;
  b.inputs.reserve(static_cast<size_t>(b.rows * b.seq_len));
  b.labels.reserve(static_cast<size_t>(b.rows * b.seq_len));
  while (b.valid < batch_size_ && example_ < index_.num_examples()) {
    while (index_.puzzle_end(puzzle_) <= example_) ++puzzle_;  // skips empty puzzles too
    index_.append_row(b, example_++, puzzle_);
  }
  for (int64_t r = b.valid; r < batch_size_; ++r) index_.append_padding(b);
  return true;
}

Batch random_batch(int64_t rows, uint64_t seed, int64_t seq_len, int64_t vocab_size, int64_t puzzle_identifiers) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> token(1, static_cast<int32_t>(vocab_size - 1)),
      label(std::min<int32_t>(2, static_cast<int32_t>(vocab_size - 1)), static_cast<int32_t>(vocab_size - 1));
  std::uniform_int_distribution<int32_t> puzzle(0, static_cast<int32_t>(puzzle_identifiers - 1));
  Batch b;
  b.rows = rows;
  b.seq_len = seq_len;
  b.valid = rows;
  for (int64_t i = 0; i < rows * seq_len; ++i) {
    b.inputs.push_back(token(rng));
    b.labels.push_back(label(rng));
  }
  for (int64_t i = 0; i < rows; ++i) b.puzzle_identifiers.push_back(puzzle(rng));
  return b;
}

}  // namespace trm
