#include "saved_predictions.hpp"

#include <ATen/ATen.h>
#include <mlh/plugin.hpp>
#include <mlh/runtime/torch_save_writer.hpp>

namespace trm {
namespace {

template <typename T>
at::Tensor tensor_of(const std::vector<T>& values, at::ScalarType type, at::IntArrayRef shape) {
  return at::from_blob(const_cast<T*>(values.data()), shape, at::TensorOptions().dtype(type)).clone();
}

}  // namespace

void SavedPredictions::add(const Batch& batch, int64_t rows, const std::vector<int32_t>& preds,
                           const std::vector<double>& q_halt_logits) {
  if (rows <= 0) return;
  if (seq_len_ == 0) seq_len_ = batch.seq_len;
  if (batch.seq_len != seq_len_)
    throw mlh::Error(MLH_ERR_INTERNAL, "saved predictions: rows of " + std::to_string(batch.seq_len) +
                                           " tokens after rows of " + std::to_string(seq_len_));
  const auto cells = static_cast<size_t>(rows * seq_len_);
  inputs_.insert(inputs_.end(), batch.inputs.begin(), batch.inputs.begin() + static_cast<std::ptrdiff_t>(cells));
  labels_.insert(labels_.end(), batch.labels.begin(), batch.labels.begin() + static_cast<std::ptrdiff_t>(cells));
  puzzle_identifiers_.insert(puzzle_identifiers_.end(), batch.puzzle_identifiers.begin(),
                             batch.puzzle_identifiers.begin() + rows);
  preds_.insert(preds_.end(), preds.begin(), preds.begin() + static_cast<std::ptrdiff_t>(cells));
  for (int64_t r = 0; r < rows; ++r) q_halt_logits_.push_back(static_cast<float>(q_halt_logits[static_cast<size_t>(r)]));
  rows_ += rows;
}

std::string SavedPredictions::file_name(int64_t step, int rank) {
  return "step_" + std::to_string(step) + "_all_preds." + std::to_string(rank);
}

void SavedPredictions::write(const std::string& path) const {
  const std::vector<int64_t> grid{rows_, seq_len_};
  mlh::rt::write_torch_save(path, {{"inputs", tensor_of(inputs_, at::kInt, grid)},
                                   {"labels", tensor_of(labels_, at::kInt, grid)},
                                   {"puzzle_identifiers", tensor_of(puzzle_identifiers_, at::kInt, {rows_})},
                                   {"preds", tensor_of(preds_, at::kLong, grid)},
                                   {"q_halt_logits", tensor_of(q_halt_logits_, at::kFloat, {rows_})}});
}

}  // namespace trm
