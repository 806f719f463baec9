// The ACT wrapper's bookkeeping: the initial carry, halted rows restarting with the new
// batch's rows while the others keep their state and data, step counts, halting only at
// halt_max_steps in eval, the Q-halt signal and exploration in training, the seeded
// generator, the Q-continue target, and input errors.
#include <string>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <mlh/plugin.hpp>

#include "helpers.hpp"
#include "model/trm.hpp"

namespace {

using trm_test::make_batch;
using trm_test::tiny_config;

void set_q_bias(trm::Trm& model, float halt, float cont) {
  at::NoGradGuard no_grad;
  model->inner->q_head->bias.copy_(at::tensor({halt, cont}));
}

TEST(TrmAct, InitialCarryIsAllHaltedAndFirstStepLoadsTheBatch) {
  const trm::ModelConfig c = tiny_config();
  trm::Trm model(c);
  model->eval();
  const trm::BatchTensors batch = make_batch(c, 3, 1);
  trm::Carry carry = model->initial_carry(batch);
  EXPECT_TRUE(carry.halted.all().item<bool>());
  EXPECT_EQ(carry.steps.scalar_type(), at::kInt);
  model->forward(carry, batch);
  EXPECT_TRUE(at::equal(carry.current.inputs, batch.inputs));
  EXPECT_TRUE(at::equal(carry.current.labels, batch.labels));
  EXPECT_TRUE(at::equal(carry.steps, at::ones({3}, at::kInt)));
  EXPECT_FALSE(carry.halted.any().item<bool>());
}

TEST(TrmAct, HaltedRowsRestartWithNewRowsOthersContinue) {
  const trm::ModelConfig c = tiny_config();
  at::manual_seed(2);
  trm::Trm model(c);
  model->eval();
  const trm::BatchTensors first = make_batch(c, 2, 2), second = make_batch(c, 2, 3);
  trm::Carry carry = model->initial_carry(first);
  model->forward(carry, first);
  const at::Tensor z_h_row1 = carry.z_h[1].clone();
  // Script the halting: row 0 halted at the previous step, row 1 did not.
  carry.halted = at::tensor({1, 0}, at::kInt).to(at::kBool);
  const trm::StepOutput out = model->forward(carry, second);
  EXPECT_TRUE(at::equal(carry.current.inputs[0], second.inputs[0]));
  EXPECT_TRUE(at::equal(carry.current.labels[0], second.labels[0]));
  EXPECT_TRUE(at::equal(carry.current.inputs[1], first.inputs[1]));
  EXPECT_TRUE(at::equal(carry.current.labels[1], first.labels[1]));
  EXPECT_TRUE(at::equal(carry.steps, at::tensor({1, 2}, at::kInt)));

  // Row 0 is a fresh start on second[0]; row 1 is the second step of first[1].
  trm::BatchTensors only0{second.inputs.narrow(0, 0, 1), second.labels.narrow(0, 0, 1),
                          second.puzzle_identifiers.narrow(0, 0, 1)};
  trm::Carry fresh = model->initial_carry(only0);
  const trm::StepOutput fresh_out = model->forward(fresh, only0);
  EXPECT_TRUE(at::allclose(out.logits[0], fresh_out.logits[0], 1e-4, 1e-5));
  trm::BatchTensors only1{first.inputs.narrow(0, 1, 1), first.labels.narrow(0, 1, 1),
                          first.puzzle_identifiers.narrow(0, 1, 1)};
  trm::Carry cont = model->initial_carry(only1);
  model->forward(cont, only1);
  EXPECT_TRUE(at::allclose(cont.z_h[0], z_h_row1, 1e-4, 1e-5));
  const trm::StepOutput cont_out = model->forward(cont, only1);
  EXPECT_TRUE(at::allclose(out.logits[1], cont_out.logits[0], 1e-4, 1e-5));
  EXPECT_FALSE(at::allclose(out.logits[1], fresh_out.logits[0]));
}

TEST(TrmAct, EvalHaltsOnlyAtMaxSteps) {
  const trm::ModelConfig c = tiny_config();  // halt_max_steps 4
  trm::Trm model(c);
  set_q_bias(model, 10.f, -10.f);  // would halt at once in training
  model->eval();
  const trm::BatchTensors batch = make_batch(c, 2, 4);
  trm::Carry carry = model->initial_carry(batch);
  for (int step = 1; step <= 4; ++step) {
    model->forward(carry, batch);
    EXPECT_TRUE(at::equal(carry.steps, at::full({2}, step, at::kInt)));
    EXPECT_EQ(carry.halted.all().item<bool>(), step == 4) << step;
    EXPECT_EQ(carry.halted.any().item<bool>(), step == 4) << step;
  }
  model->forward(carry, batch);  // restarts
  EXPECT_TRUE(at::equal(carry.steps, at::ones({2}, at::kInt)));
}

TEST(TrmAct, TrainingHaltsOnQSignalWithoutExploration) {
  trm::ModelConfig c = tiny_config();
  trm::Trm model(c);
  model->train();
  const trm::BatchTensors batch = make_batch(c, 3, 5);
  set_q_bias(model, 10.f, 0.f);
  trm::Carry carry = model->initial_carry(batch);
  model->forward(carry, batch);
  EXPECT_TRUE(carry.halted.all().item<bool>());  // q_halt > 0, prob 0: halt after one step
  set_q_bias(model, -10.f, 0.f);
  carry = model->initial_carry(batch);
  for (int step = 1; step <= 4; ++step) {
    model->forward(carry, batch);
    EXPECT_EQ(carry.halted.any().item<bool>(), step == 4) << step;
  }
  // halt_max_steps 1 never consults the Q head.
  c.halt_max_steps = 1;
  trm::Trm single(c);
  single->train();
  carry = single->initial_carry(batch);
  single->forward(carry, batch);
  EXPECT_TRUE(carry.halted.all().item<bool>());
}

TEST(TrmAct, NoActContinueFalseComparesHaltWithContinue) {
  trm::ModelConfig c = tiny_config();
  c.no_act_continue = false;
  trm::Trm model(c);
  model->train();
  const trm::BatchTensors batch = make_batch(c, 2, 6);
  set_q_bias(model, -3.f, -4.f);  // q_halt < 0 but > q_continue: halts
  trm::Carry carry = model->initial_carry(batch);
  trm::StepOutput out = model->forward(carry, batch);
  EXPECT_TRUE(carry.halted.all().item<bool>());
  ASSERT_TRUE(out.target_q_continue.defined());
  // The next step's Q values equal these (bias only), not the last step: sigmoid(max(-3, -4)).
  EXPECT_TRUE(at::allclose(out.target_q_continue, at::full({2}, 1.0 / (1.0 + std::exp(3.0)), at::kFloat)));
  EXPECT_FALSE(out.target_q_continue.requires_grad());
  model->eval();
  carry = model->initial_carry(batch);
  EXPECT_FALSE(model->forward(carry, batch).target_q_continue.defined());
}

TEST(TrmAct, ExplorationDelaysHaltingAndIsSeeded) {
  trm::ModelConfig c = tiny_config();
  c.halt_max_steps = 6;
  c.halt_exploration_prob = 1.0;
  trm::Trm model(c);
  model->train();
  set_q_bias(model, 10.f, 0.f);  // always wants to halt
  const trm::BatchTensors batch = make_batch(c, 16, 7);
  auto run = [&](uint64_t seed) {
    model->set_halt_generator(at::detail::createCPUGenerator(seed));
    trm::Carry carry = model->initial_carry(batch);
    at::Tensor halted_at = at::zeros({16}, at::kInt);
    for (int step = 1; step <= 6; ++step) {
      model->forward(carry, batch);
      if (step == 1) {
        EXPECT_FALSE(carry.halted.any().item<bool>());  // min steps >= 2 for every row
      }
      halted_at = at::where(carry.halted & (halted_at == 0), at::full({16}, step, at::kInt), halted_at);
      carry.halted = at::zeros_like(carry.halted);  // keep every row counting its steps
    }
    return halted_at;
  };
  const at::Tensor a = run(11), b = run(11), d = run(12);
  EXPECT_TRUE(at::equal(a, b));
  EXPECT_TRUE((a >= 2).all().item<bool>());  // at step 6 = halt_max_steps at the latest
  EXPECT_TRUE((a <= 6).all().item<bool>());
  EXPECT_FALSE(at::equal(a, d));  // 16 rows: two seeds giving the same pattern is unlikely
}

TEST(TrmAct, BadBatchesNameWhatIsWrong) {
  const trm::ModelConfig c = tiny_config();
  trm::Trm model(c);
  const trm::BatchTensors batch = make_batch(c, 2, 8);
  trm::Carry carry = model->initial_carry(batch);
  auto message = [&](trm::BatchTensors b) {
    try {
      model->forward(carry, b);
    } catch (const mlh::Error& e) {
      EXPECT_EQ(e.code(), MLH_ERR_INVALID_ARGUMENT);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  trm::BatchTensors b = batch;
  b.inputs = at::zeros({2, 7}, at::kInt);
  EXPECT_NE(message(b).find("inputs"), std::string::npos);
  b = batch;
  b.labels = at::zeros({2, 3}, at::kInt);
  EXPECT_NE(message(b).find("labels"), std::string::npos);
  b = batch;
  b.puzzle_identifiers = at::zeros({3}, at::kInt);
  EXPECT_NE(message(b).find("puzzle_identifiers"), std::string::npos);
  EXPECT_NE(message(make_batch(c, 3, 9)).find("batch size"), std::string::npos);
  b = batch;
  b.inputs = batch.inputs.to(at::kFloat);
  EXPECT_NE(message(b).find("integer"), std::string::npos);
}

}  // namespace
