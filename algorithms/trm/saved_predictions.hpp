// Every evaluated test example's prediction, kept for outside evaluators in the TRM
// reference's format: what its pretrain.py saves with `eval_save_outputs` (torch.save of a dict
// of tensors, rows in evaluation order) and what its ARC evaluator's update_batch reads:
//   inputs, labels       int32 [N, seq_len] (labels: -100 where nothing is to be predicted)
//   puzzle_identifiers   int32 [N]
//   preds                int64 [N, seq_len], the argmax after the last ACT step
//   q_halt_logits        float32 [N], the last step's halting logit
// Padding rows are left out (the reference keeps them, marked by the blank identifier, and its
// evaluator drops them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/sampler.hpp"

namespace trm {

class SavedPredictions {
 public:
  // The first `rows` rows of `batch`, with the model's answers to them (rows x seq_len tokens)
  // and halting logits.
  void add(const Batch& batch, int64_t rows, const std::vector<int32_t>& preds, const std::vector<double>& q_halt_logits);
  int64_t rows() const { return rows_; }
  // The reference's file name for one rank's predictions at a step: step_<step>_all_preds.<rank>.
  static std::string file_name(int64_t step, int rank = 0);
  void write(const std::string& path) const;

 private:
  int64_t rows_ = 0, seq_len_ = 0;
  std::vector<int32_t> inputs_, labels_, puzzle_identifiers_;
  std::vector<int64_t> preds_;
  std::vector<float> q_halt_logits_;
};

}  // namespace trm
