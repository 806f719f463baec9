// Training pieces: sign SGD on the puzzle embedding (only the batch's rows move, by lr * sign
// of the summed gradient plus decay), AdamW over dense_parameters() leaving the table alone,
// the EMA of the weights, and a tiny model learning a toy task.
#include <cmath>
#include <sstream>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <mlh/plugin.hpp>
#include <mlh/runtime/checkpoint.hpp>
#include <torch/optim/adamw.h>

#include "helpers.hpp"
#include "model/ema.hpp"
#include "model/loss.hpp"
#include "model/sign_sgd.hpp"
#include "model/trm.hpp"

namespace {

using trm_test::make_batch;
using trm_test::tiny_config;

trm::ModelConfig puzzle_config() {
  trm::ModelConfig c = tiny_config();
  c.puzzle_emb_ndim = 32;
  c.num_puzzle_identifiers = 5;
  return c;
}

TEST(TrmSignSgd, UpdatesOnlyTheBatchRowsBySignOfSummedGradient) {
  const trm::ModelConfig c = puzzle_config();
  at::manual_seed(1);
  trm::Trm model(c);
  trm::SparseEmbeddingImpl& emb = *model->puzzle_embedding();
  {
    at::NoGradGuard no_grad;
    emb.weights.normal_();
  }
  const at::Tensor before = emb.weights.clone();
  trm::BatchTensors batch = make_batch(c, 3, 1);
  batch.puzzle_identifiers = at::tensor({1, 3, 1}, at::kInt);  // row 1 of the table twice
  model->train();
  trm::Carry carry = model->initial_carry(batch);
  const trm::StepOutput out = model->forward(carry, batch);
  trm::act_loss(out, carry, trm::LossKind::kStablemax).loss.backward();
  const at::Tensor local_grad = emb.local_weights().grad();
  ASSERT_TRUE(local_grad.defined());
  EXPECT_TRUE(at::equal(emb.local_ids(), at::tensor({1, 3, 1}, at::kLong)));

  const double lr = 0.1, wd = 0.5;
  trm::SignSgd sgd(emb, lr, wd);
  ASSERT_TRUE(sgd.step());
  const at::Tensor g1 = local_grad[0] + local_grad[2], g3 = local_grad[1];
  EXPECT_TRUE(at::allclose(emb.weights[1], before[1] * (1 - lr * wd) - lr * at::sign(g1), 1e-6, 1e-7));
  EXPECT_TRUE(at::allclose(emb.weights[3], before[3] * (1 - lr * wd) - lr * at::sign(g3), 1e-6, 1e-7));
  for (int64_t row : {0, 2, 4}) EXPECT_TRUE(at::equal(emb.weights[row], before[row])) << row;
  // Row 1's two copies have gradients of differing signs somewhere, so the check above tells
  // the summed gradient from either copy's.
  EXPECT_FALSE(at::equal(at::sign(g1), at::sign(local_grad[0])));
  // Sign SGD: every element moves by exactly lr beyond the decay.
  EXPECT_NEAR((emb.weights[3] - before[3] * (1 - lr * wd)).abs().max().item<double>(), lr, 1e-6);

  sgd.zero_grad();
  EXPECT_TRUE(emb.gathered().empty());
  EXPECT_FALSE(emb.local_weights().defined());
  EXPECT_FALSE(sgd.step(0.1));  // nothing to apply
  EXPECT_THROW(trm::SignSgd(emb, -1.0, 0.0), mlh::Error);
  EXPECT_THROW(trm::SignSgd(emb, 0.1, -0.1), mlh::Error);
}

// A step in two micro-batches (oom_backoff.hpp): each forward gathers its own rows, and the
// update is the one of a single forward over all of them.
TEST(TrmSignSgd, MicroBatchesUpdateTheRowsOfEveryForward) {
  const trm::ModelConfig c = puzzle_config();
  trm::BatchTensors batch = make_batch(c, 4, 1);
  batch.puzzle_identifiers = at::tensor({1, 3, 1, 4}, at::kInt);
  auto rows = [&](int64_t begin, int64_t count) {
    return trm::BatchTensors{batch.inputs.narrow(0, begin, count), batch.labels.narrow(0, begin, count),
                             batch.puzzle_identifiers.narrow(0, begin, count)};
  };
  auto updated_table = [&](bool split) {
    at::manual_seed(5);
    trm::Trm model(c);
    model->train();
    trm::SparseEmbeddingImpl& emb = *model->puzzle_embedding();
    for (const auto& [begin, count] : split ? std::vector<std::pair<int64_t, int64_t>>{{0, 2}, {2, 2}}
                                            : std::vector<std::pair<int64_t, int64_t>>{{0, 4}}) {
      const trm::BatchTensors part = rows(begin, count);
      trm::Carry carry = model->initial_carry(part);
      const trm::StepOutput out = model->forward(carry, part);
      trm::act_loss(out, carry, trm::LossKind::kStablemax).loss.backward();
    }
    EXPECT_EQ(emb.gathered().size(), split ? 2u : 1u);
    trm::SignSgd sgd(emb, 0.1, 0.0);
    EXPECT_TRUE(sgd.step());
    return emb.weights.clone();
  };
  const at::Tensor whole = updated_table(false), split = updated_table(true);
  EXPECT_TRUE(at::allclose(whole, split, 1e-6, 1e-7));
}

TEST(TrmSignSgd, EvalAndNoGradForwardsRecordNothing) {
  const trm::ModelConfig c = puzzle_config();
  trm::Trm model(c);
  const trm::BatchTensors batch = make_batch(c, 2, 2);
  model->eval();
  trm::Carry carry = model->initial_carry(batch);
  model->forward(carry, batch);
  EXPECT_FALSE(model->puzzle_embedding()->local_weights().defined());
  model->train();
  {
    at::NoGradGuard no_grad;
    model->forward(carry, batch);
  }
  EXPECT_FALSE(model->puzzle_embedding()->local_weights().defined());

  // The Q-continue target's second (no-grad) inner pass keeps the grad pass's rows.
  trm::ModelConfig with_target = c;
  with_target.no_act_continue = false;
  trm::Trm bootstrapped(with_target);
  bootstrapped->train();
  carry = bootstrapped->initial_carry(batch);
  const trm::StepOutput out = bootstrapped->forward(carry, batch);
  ASSERT_TRUE(out.target_q_continue.defined());
  trm::act_loss(out, carry, trm::LossKind::kStablemax).loss.backward();
  ASSERT_TRUE(bootstrapped->puzzle_embedding()->local_weights().grad().defined());
  EXPECT_GT(bootstrapped->puzzle_embedding()->local_weights().grad().abs().sum().item<double>(), 0.0);
}

TEST(TrmSignSgd, AdamWOverDenseParametersLeavesTheTableAlone) {
  const trm::ModelConfig c = puzzle_config();
  at::manual_seed(3);
  trm::Trm model(c);
  const std::vector<at::Tensor> dense = trm::dense_parameters(model);
  EXPECT_EQ(dense.size(), model->parameters().size());
  const auto* table = model->puzzle_embedding()->weights.data_ptr();
  for (const at::Tensor& p : dense) EXPECT_NE(p.data_ptr(), table);
  EXPECT_NE(model->named_buffers().find("inner.puzzle_emb.weights"), nullptr);
  EXPECT_EQ(model->named_parameters().find("inner.puzzle_emb.weights"), nullptr);

  torch::optim::AdamW adam(dense, torch::optim::AdamWOptions(1e-2).weight_decay(0.1));
  const at::Tensor table_before = model->puzzle_embedding()->weights.clone();
  const at::Tensor head_before = model->inner->lm_head->weight.clone();
  model->train();
  const trm::BatchTensors batch = make_batch(c, 2, 3);
  trm::Carry carry = model->initial_carry(batch);
  trm::act_loss(model->forward(carry, batch), carry, trm::LossKind::kStablemax).loss.backward();
  adam.step();
  EXPECT_TRUE(at::equal(model->puzzle_embedding()->weights, table_before));
  EXPECT_FALSE(at::equal(model->inner->lm_head->weight, head_before));
}

TEST(TrmEma, ShadowFollowsTheFormulaAndSwapRestores) {
  trm::Trm model(tiny_config());
  trm::Ema ema(*model, 0.9);
  EXPECT_THROW(trm::Ema(*model, 1.0), mlh::Error);
  at::Tensor& w = model->inner->lm_head->weight;
  const at::Tensor w0 = w.clone();
  size_t index = 0;
  for (const auto& item : model->named_parameters()) {
    if (item.key() == "inner.lm_head.weight") break;
    ++index;
  }
  ASSERT_LT(index, ema.shadow().size());
  at::NoGradGuard no_grad;
  w.add_(1.0);
  ema.update();
  w.add_(1.0);
  ema.update();
  // shadow = 0.9 (0.9 w0 + 0.1 (w0 + 1)) + 0.1 (w0 + 2) = w0 + 0.29
  EXPECT_TRUE(at::allclose(ema.shadow()[index], w0 + 0.29, 1e-5, 1e-6));
  const at::Tensor trained = w.clone();
  {
    trm::Ema::Swapped swapped(ema);
    EXPECT_TRUE(at::allclose(w, w0 + 0.29, 1e-5, 1e-6));
  }
  EXPECT_TRUE(at::equal(w, trained));
  EXPECT_TRUE(at::allclose(ema.shadow()[index], w0 + 0.29, 1e-5, 1e-6));

  trm::Trm copy(tiny_config());
  ema.copy_to(*copy);
  EXPECT_TRUE(at::allclose(copy->inner->lm_head->weight, w0 + 0.29, 1e-5, 1e-6));
  trm::ModelConfig other = tiny_config();
  other.hidden = 64;
  trm::Trm wrong(other);
  EXPECT_THROW(ema.copy_to(*wrong), mlh::Error);
}

TEST(TrmEma, StateRoundTripsThroughTrainingState) {
  trm::Trm model(tiny_config());
  trm::Ema ema(*model);
  {
    at::NoGradGuard no_grad;
    for (auto& p : model->parameters()) p.add_(1.0);
  }
  ema.update();
  std::stringstream stream;
  mlh::rt::TrainingState state;
  state.add("ema", ema.state_module());
  mlh::rt::save_training_state(state, stream);

  trm::Ema fresh(*model);  // shadow = current params
  mlh::rt::TrainingState target;
  target.add("ema", fresh.state_module());
  mlh::rt::load_training_state(target, stream, at::Device(at::kCPU));
  ASSERT_EQ(fresh.shadow().size(), ema.shadow().size());
  for (size_t i = 0; i < ema.shadow().size(); ++i) EXPECT_TRUE(at::equal(fresh.shadow()[i], ema.shadow()[i])) << i;
}

// Labels = (token + 1) mod vocab: a per-token map a tiny model learns in ~100 AdamW steps.
TEST(TrmTraining, TinyModelLearnsAddOneModVocab) {
  trm::ModelConfig c = tiny_config();
  c.halt_max_steps = 2;
  c.puzzle_emb_ndim = 32;
  c.num_puzzle_identifiers = 4;
  at::manual_seed(10);
  trm::Trm model(c);
  model->train();
  model->set_halt_generator(at::detail::createCPUGenerator(10));
  torch::optim::AdamW adam(trm::dense_parameters(model), torch::optim::AdamWOptions(3e-3).weight_decay(0.01));
  trm::SignSgd sgd(*model->puzzle_embedding(), 1e-2, 0.1);
  trm::Carry carry = model->initial_carry(make_batch(c, 16, 0));
  double first = 0, last = 0, last_exact = 0, last_count = 0;
  const int steps = 120;
  for (int step = 0; step < steps; ++step) {
    const trm::BatchTensors batch = make_batch(c, 16, 100 + step);
    const trm::StepOutput out = model->forward(carry, batch);
    const trm::ActLoss loss = trm::act_loss(out, carry, trm::LossKind::kStablemax);
    adam.zero_grad();
    sgd.zero_grad();
    loss.loss.backward();
    adam.step();
    sgd.step();
    if (step < 10) first += loss.lm_loss;
    if (step >= steps - 10) {
      last += loss.lm_loss;
      last_exact += loss.exact_sum;
      last_count += loss.count;
    }
  }
  EXPECT_LT(last, 0.25 * first) << "first " << first / 10 << " last " << last / 10;
  EXPECT_GT(last_exact / std::max(last_count, 1.0), 0.5);
}

}  // namespace
