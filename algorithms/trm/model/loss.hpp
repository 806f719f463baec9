// TRM's losses (HRM/TRM models/losses.py): per-token stablemax or softmax cross-entropy, and
// the ACT loss head (ACTLossHead) that adds the Q-halt (and Q-continue) binary cross-entropy
// and gathers the reference's metrics.
#pragma once

#include <cstdint>

#include <ATen/Tensor.h>

#include "data/ignore_label.hpp"
#include "model/trm.hpp"

namespace trm {

// Per token [B, S] from logits [B, S, V] and labels [B, S]; 0 where labels == ignore_index.
// Stablemax (Prieto et al. 2025), in float64 as the reference: s(x) = x + 1 for x >= 0,
// 1 / (1 - x + 1e-30) below; loss = -log(s(x_label) / sum_v s(x_v)).
at::Tensor stablemax_cross_entropy(const at::Tensor& logits, const at::Tensor& labels,
                                   int64_t ignore_index = kIgnoreLabel);
// Ordinary softmax cross-entropy in float32, per token.
at::Tensor softmax_cross_entropy(const at::Tensor& logits, const at::Tensor& labels,
                                 int64_t ignore_index = kIgnoreLabel);

enum class LossKind { kStablemax, kSoftmax };

struct ActLoss {
  // sum over rows of (row's mean LM loss over its labelled tokens)
  //   + 0.5 * (BCE_sum(q_halt, row fully correct) + BCE_sum(q_continue, target_q_continue));
  // the last term only when the step output has a target. Summed, not averaged, over the
  // batch as the reference (which divides by the global batch size in its optimizer step).
  at::Tensor loss;
  // Over the rows that halted at this step and have >= 1 label (the reference's metrics,
  // sums: divide by count): count, per-row token accuracy, exact (whole-row) accuracy,
  // (q_halt >= 0) == row correct, and steps taken.
  double count = 0, accuracy_sum = 0, exact_sum = 0, q_halt_accuracy_sum = 0, steps_sum = 0;
  double lm_loss = 0, q_halt_loss = 0, q_continue_loss = 0;  // the loss's parts (detached)
  bool all_halted = false;  // every row halted at this step
};

// `carry_after_step` is the carry that forward() updated: its current.labels are the rows'
// labels and halted/steps the step's outcome. Throws mlh::Error if the carry has no labels.
ActLoss act_loss(const StepOutput& output, const Carry& carry_after_step, LossKind kind);

}  // namespace trm
