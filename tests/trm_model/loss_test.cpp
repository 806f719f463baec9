// Stablemax and softmax cross-entropy against hand-computed values and ATen, and the ACT
// loss head's loss and metrics on a hand-made batch.
#include <cmath>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <mlh/plugin.hpp>

#include "model/loss.hpp"

namespace {

TEST(TrmLoss, StablemaxMatchesHandComputedValues) {
  // s([1, -1, 0]) = [2, 0.5, 1], sum 3.5.
  const at::Tensor logits = at::tensor({1.0f, -1.0f, 0.0f}).view({1, 1, 3}).repeat({1, 3, 1});
  const at::Tensor labels = at::tensor({0, 1, 2}, at::kLong).view({1, 3});
  const at::Tensor loss = trm::stablemax_cross_entropy(logits, labels);
  EXPECT_EQ(loss.scalar_type(), at::kDouble);
  EXPECT_EQ(loss.sizes(), at::IntArrayRef({1, 3}));
  EXPECT_NEAR(loss[0][0].item<double>(), -std::log(2.0 / 3.5), 1e-12);
  EXPECT_NEAR(loss[0][1].item<double>(), -std::log(0.5 / 3.5), 1e-12);
  EXPECT_NEAR(loss[0][2].item<double>(), -std::log(1.0 / 3.5), 1e-12);
  // Large negative logits stay finite (the point of stablemax): s(-1e6) ~ 1e-6.
  const at::Tensor extreme = at::tensor({-1e6f, 0.0f}).view({1, 1, 2});
  const double e = trm::stablemax_cross_entropy(extreme, at::zeros({1, 1}, at::kLong)).item<double>();
  EXPECT_NEAR(e, -std::log((1.0 / (1.0 + 1e6)) / (1.0 / (1.0 + 1e6) + 1.0)), 1e-9);
}

TEST(TrmLoss, IgnoredLabelsGiveZero) {
  at::manual_seed(0);
  const at::Tensor logits = at::randn({2, 4, 5});
  const at::Tensor labels = at::tensor({1, -100, 3, -100, -100, 0, 4, 2}, at::kLong).view({2, 4});
  for (const at::Tensor& loss :
       {trm::stablemax_cross_entropy(logits, labels), trm::softmax_cross_entropy(logits, labels)}) {
    EXPECT_EQ(loss[0][1].item<double>(), 0.0);
    EXPECT_EQ(loss[1][0].item<double>(), 0.0);
    EXPECT_GT(loss[0][0].item<double>(), 0.0);
  }
  // A custom ignore index.
  EXPECT_EQ(trm::stablemax_cross_entropy(logits, labels.clamp_min(0), 3)[0][2].item<double>(), 0.0);
}

TEST(TrmLoss, SoftmaxMatchesAtenCrossEntropy) {
  at::manual_seed(1);
  const at::Tensor logits = at::randn({3, 4, 7});
  const at::Tensor labels = at::randint(0, 7, {3, 4}, at::kInt);
  const at::Tensor ours = trm::softmax_cross_entropy(logits, labels);
  const at::Tensor expected = at::cross_entropy_loss(logits.view({12, 7}), labels.view({12}).to(at::kLong), {},
                                                     at::Reduction::None)
                                  .view({3, 4});
  EXPECT_TRUE(at::allclose(ours, expected));
  EXPECT_EQ(ours.scalar_type(), at::kFloat);
  EXPECT_THROW(trm::softmax_cross_entropy(logits, labels.narrow(1, 0, 3)), mlh::Error);
  EXPECT_THROW(trm::stablemax_cross_entropy(logits, labels.narrow(0, 0, 2)), mlh::Error);
}

// 3 rows of 3 tokens, vocab 4. Row 0 all correct, row 1 one token wrong, row 2 all ignored.
struct HandCase {
  trm::StepOutput out;
  trm::Carry carry;
  HandCase() {
    const at::Tensor labels = at::tensor({1, 2, 3, 0, 1, -100, -100, -100, -100}, at::kInt).view({3, 3});
    const at::Tensor preds = at::tensor({1, 2, 3, 0, 2, 0, 0, 0, 0}, at::kLong).view({3, 3});
    out.logits = at::one_hot(preds, 4).to(at::kFloat) * 2.0 - 0.5;  // argmax = preds
    out.logits.requires_grad_(true);
    out.q_halt_logits = at::tensor({1.0f, 1.0f, -1.0f}).requires_grad_(true);
    out.q_continue_logits = at::tensor({0.5f, -0.5f, 0.0f}).requires_grad_(true);
    carry.current.labels = labels;
    carry.steps = at::tensor({2, 3, 4}, at::kInt);
    carry.halted = at::ones({3}, at::kBool);
  }
};

double bce(double logit, double target) { return std::log1p(std::exp(-std::abs(logit))) + std::max(logit, 0.0) - logit * target; }

TEST(TrmLoss, ActLossMetricsAndLossOnHandMadeBatch) {
  HandCase h;
  const trm::ActLoss r = trm::act_loss(h.out, h.carry, trm::LossKind::kStablemax);
  EXPECT_EQ(r.count, 2);                       // row 2 has no labels
  EXPECT_NEAR(r.accuracy_sum, 1.0 + 1.0 / 2.0, 1e-6);  // row 1: 1 of its 2 labels
  EXPECT_EQ(r.exact_sum, 1);
  EXPECT_EQ(r.q_halt_accuracy_sum, 1);         // row 0: halt>=0 and correct; row 1: halt>=0 but wrong
  EXPECT_EQ(r.steps_sum, 5);
  EXPECT_TRUE(r.all_halted);
  // LM: per-row mean over labelled tokens, summed over rows.
  const at::Tensor per_token = trm::stablemax_cross_entropy(h.out.logits.detach(), h.carry.current.labels);
  const double lm = per_token[0].sum().item<double>() / 3 + per_token[1].sum().item<double>() / 2;
  // Q-halt target: the whole row correct (row 2, with no labels, counts as correct).
  const double q_halt = bce(1.0, 1.0) + bce(1.0, 0.0) + bce(-1.0, 1.0);
  EXPECT_NEAR(r.lm_loss, lm, 1e-6);
  EXPECT_NEAR(r.q_halt_loss, q_halt, 1e-5);
  EXPECT_NEAR(r.loss.item<double>(), lm + 0.5 * q_halt, 1e-5);
  r.loss.backward();
  EXPECT_TRUE(h.out.logits.grad().defined());
  EXPECT_FALSE(h.out.q_continue_logits.grad().defined());  // no target: no Q-continue loss

  const trm::ActLoss soft = trm::act_loss(h.out, h.carry, trm::LossKind::kSoftmax);
  const at::Tensor soft_tokens = trm::softmax_cross_entropy(h.out.logits.detach(), h.carry.current.labels);
  EXPECT_NEAR(soft.lm_loss, soft_tokens[0].sum().item<double>() / 3 + soft_tokens[1].sum().item<double>() / 2, 1e-5);
}

TEST(TrmLoss, ActLossCountsOnlyHaltedRowsAndAddsQContinue) {
  HandCase h;
  h.carry.halted = at::tensor({0, 1, 0}, at::kInt).to(at::kBool);
  h.out.target_q_continue = at::tensor({0.25f, 0.5f, 1.0f});
  const trm::ActLoss r = trm::act_loss(h.out, h.carry, trm::LossKind::kStablemax);
  EXPECT_EQ(r.count, 1);
  EXPECT_NEAR(r.accuracy_sum, 1.0 / 2.0, 1e-6);
  EXPECT_EQ(r.exact_sum, 0);
  EXPECT_EQ(r.q_halt_accuracy_sum, 0);
  EXPECT_EQ(r.steps_sum, 3);
  EXPECT_FALSE(r.all_halted);
  const double q_continue = bce(0.5, 0.25) + bce(-0.5, 0.5) + bce(0.0, 1.0);
  EXPECT_NEAR(r.q_continue_loss, q_continue, 1e-5);
  EXPECT_NEAR(r.loss.item<double>(), r.lm_loss + 0.5 * (r.q_halt_loss + q_continue), 1e-5);
  // The LM and Q-halt terms do not depend on halting: the loss covers every row.
  const trm::ActLoss all = trm::act_loss(HandCase().out, HandCase().carry, trm::LossKind::kStablemax);
  EXPECT_NEAR(r.lm_loss, all.lm_loss, 1e-9);
  h.carry.current.labels = at::Tensor();
  EXPECT_THROW(trm::act_loss(h.out, h.carry, trm::LossKind::kStablemax), mlh::Error);
}

}  // namespace
