// The recursive model: config JSON and validation, output shapes of each variant, causality,
// the 1-step gradient (only the last H-cycle backpropagates, the carry is detached), gradient
// checkpointing, bf16 autocast, and save/load through the runtime's TrainingState.
#include <sstream>
#include <string>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <mlh/plugin.hpp>
#include <mlh/runtime/checkpoint.hpp>
#include <mlh/runtime/precision.hpp>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "no_default.hpp"
#include "model/loss.hpp"
#include "model/trm.hpp"

namespace {

using trm_test::make_batch;
using trm_test::tiny_config;

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const mlh::Error& e) {
    EXPECT_EQ(e.code(), MLH_ERR_INVALID_ARGUMENT);
    return e.what();
  }
  ADD_FAILURE() << "no mlh::Error";
  return "";
}

TEST(TrmModelConfig, JsonRoundTripNeedsEveryField) {
  trm::ModelConfig c = tiny_config();
  c.puzzle_emb_ndim = 40;
  c.mlp_t = true;
  c.halt_exploration_prob = 0.25;
  const nlohmann::json saved = trm::to_json(c);
  const trm::ModelConfig back = trm::model_config_from_json(saved);
  EXPECT_EQ(trm::to_json(back), saved);
  EXPECT_EQ(trm::resolved_puzzle_emb_len(back), 2);  // ceil(40 / 32)
  EXPECT_EQ(trm::total_seq_len(back), 10);
  // No field falls back to a value of the code's: a record without one is refused, naming it.
  for (const auto& [key, value] : saved.items()) {
    nlohmann::json partial = saved;
    partial.erase(key);
    const std::string e = error_of([&] { trm::model_config_from_json(partial); });
    EXPECT_NE(e.find("'" + key + "' is missing"), std::string::npos) << e;
  }
}

// Each structured binding names every member, so a member added to ModelConfig stops this from
// compiling until it is sorted here: every value comes from the config or the saved record.
TEST(TrmModelConfig, DeclaresNoDefault) {
  [[maybe_unused]] const auto [seq_len, vocab_size, num_puzzle_identifiers, puzzle_emb_ndim, puzzle_emb_len, hidden,
                               num_heads, expansion, h_cycles, l_cycles, l_layers, halt_max_steps,
                               halt_exploration_prob, no_act_continue, mlp_t, causal, rope_theta, rms_norm_eps,
                               gradient_checkpointing] = trm::ModelConfig{};
  EXPECT_NO_DEFAULT(seq_len);
  EXPECT_NO_DEFAULT(vocab_size);
  EXPECT_NO_DEFAULT(num_puzzle_identifiers);
  EXPECT_NO_DEFAULT(puzzle_emb_ndim);
  EXPECT_NO_DEFAULT(puzzle_emb_len);
  EXPECT_NO_DEFAULT(hidden);
  EXPECT_NO_DEFAULT(num_heads);
  EXPECT_NO_DEFAULT(expansion);
  EXPECT_NO_DEFAULT(h_cycles);
  EXPECT_NO_DEFAULT(l_cycles);
  EXPECT_NO_DEFAULT(l_layers);
  EXPECT_NO_DEFAULT(halt_max_steps);
  EXPECT_NO_DEFAULT(halt_exploration_prob);
  EXPECT_NO_DEFAULT(no_act_continue);
  EXPECT_NO_DEFAULT(mlp_t);
  EXPECT_NO_DEFAULT(causal);
  EXPECT_NO_DEFAULT(rope_theta);
  EXPECT_NO_DEFAULT(rms_norm_eps);
  EXPECT_NO_DEFAULT(gradient_checkpointing);
}

// tiny_config()'s record with some fields changed or added.
nlohmann::json tiny_record(const nlohmann::json& changes) {
  nlohmann::json record = trm::to_json(tiny_config());
  record.update(changes);
  return record;
}

TEST(TrmModelConfig, ErrorsNameTheField) {
  auto error_for = [](const nlohmann::json& changes) {
    return error_of([&] { trm::model_config_from_json(tiny_record(changes)); });
  };
  EXPECT_NE(error_for({{"hiden", 3}}).find("hiden"), std::string::npos);
  EXPECT_NE(error_for({{"hidden", "big"}}).find("hidden"), std::string::npos);
  EXPECT_NE(error_for({{"mlp_t", 1}}).find("mlp_t"), std::string::npos);
  EXPECT_NE(error_for({{"hidden", 30}, {"num_heads", 4}}).find("num_heads"), std::string::npos);
  EXPECT_NE(error_for({{"l_cycles", 0}}).find("l_cycles"), std::string::npos);
  EXPECT_NE(error_for({{"halt_exploration_prob", 1.5}}).find("halt_exploration_prob"), std::string::npos);
  EXPECT_NE(error_for({{"mlp_t", true}, {"causal", true}}).find("causal"), std::string::npos);
  EXPECT_NE(error_for({{"hidden", 32}, {"puzzle_emb_ndim", 100}, {"puzzle_emb_len", 2}}).find("puzzle_emb_len"),
            std::string::npos);
  EXPECT_NE(error_of([] { trm::model_config_from_json(nlohmann::json::array()); }).find("object"), std::string::npos);
  trm::ModelConfig bad = tiny_config();
  bad.vocab_size = 0;
  EXPECT_NE(error_of([&] { trm::Trm model(bad); }).find("vocab_size"), std::string::npos);
}

struct ShapeCase {
  int64_t puzzle_emb_ndim;
  bool mlp_t;
  int64_t prefix;
};

class TrmShapes : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(TrmShapes, LogitsQAndCarryShapes) {
  trm::ModelConfig c = tiny_config();
  c.puzzle_emb_ndim = GetParam().puzzle_emb_ndim;
  c.num_puzzle_identifiers = 3;
  c.mlp_t = GetParam().mlp_t;
  trm::Trm model(c);
  EXPECT_EQ(model->puzzle_embedding() != nullptr, c.puzzle_emb_ndim > 0);
  EXPECT_EQ(bool(model->inner->rotary_emb), !c.mlp_t);
  const trm::BatchTensors batch = make_batch(c, 3, 1);
  trm::Carry carry = model->initial_carry(batch);
  const trm::StepOutput out = model->forward(carry, batch);
  EXPECT_EQ(out.logits.sizes(), at::IntArrayRef({3, 8, 6}));
  EXPECT_EQ(out.q_halt_logits.sizes(), at::IntArrayRef({3}));
  EXPECT_EQ(out.q_continue_logits.sizes(), at::IntArrayRef({3}));
  EXPECT_EQ(out.q_halt_logits.scalar_type(), at::kFloat);
  EXPECT_FALSE(out.target_q_continue.defined());
  EXPECT_EQ(carry.z_h.sizes(), at::IntArrayRef({3, 8 + GetParam().prefix, 32}));
  EXPECT_EQ(carry.z_l.sizes(), carry.z_h.sizes());
  // q_head starts with zero weight and bias -5.
  EXPECT_TRUE(at::allclose(out.q_halt_logits, at::full({3}, -5.0f)));
  EXPECT_TRUE(at::isfinite(out.logits).all().item<bool>());
}

INSTANTIATE_TEST_SUITE_P(Variants, TrmShapes,
                         ::testing::Values(ShapeCase{0, false, 0}, ShapeCase{32, false, 1}, ShapeCase{40, false, 2},
                                           ShapeCase{0, true, 0}, ShapeCase{64, true, 2}),
                         [](const auto& info) {  // a readable name (gtest prints the struct's bytes otherwise)
                           return std::string(info.param.mlp_t ? "MlpT" : "Attention")
                               .append("PuzzleEmb")
                               .append(std::to_string(info.param.puzzle_emb_ndim));
                         });

TEST(TrmModel, StateNamesFollowTheReference) {
  trm::ModelConfig c = tiny_config();
  c.puzzle_emb_ndim = 32;
  c.l_layers = 2;
  trm::Trm model(c);
  const auto params = model->named_parameters();
  for (const char* name : {"inner.embed_tokens.embedding_weight", "inner.lm_head.weight", "inner.q_head.weight",
                           "inner.q_head.bias", "inner.L_level.layers.0.self_attn.qkv_proj.weight",
                           "inner.L_level.layers.1.self_attn.o_proj.weight", "inner.L_level.layers.1.mlp.gate_up_proj.weight",
                           "inner.L_level.layers.0.mlp.down_proj.weight"})
    EXPECT_NE(params.find(name), nullptr) << name;
  EXPECT_EQ(params.size(), 4u + 2 * 4u);
  const auto buffers = model->named_buffers();
  for (const char* name : {"inner.H_init", "inner.L_init", "inner.puzzle_emb.weights"})
    EXPECT_NE(buffers.find(name), nullptr) << name;
  EXPECT_EQ(model->inner->H_init.sizes(), at::IntArrayRef({32}));
  EXPECT_FALSE(model->inner->q_head->weight.abs().sum().item<double>() > 0);
}

TEST(TrmModel, ExplicitPuzzleEmbLenPadsThePrefix) {
  trm::ModelConfig c = tiny_config();
  c.puzzle_emb_ndim = 16;
  c.puzzle_emb_len = 3;
  trm::Trm model(c);
  const trm::BatchTensors batch = make_batch(c, 2, 2);
  model->eval();
  const at::Tensor x = model->inner->input_embeddings(batch.inputs, batch.puzzle_identifiers);
  EXPECT_EQ(x.sizes(), at::IntArrayRef({2, 11, 32}));
  EXPECT_TRUE(at::equal(x.narrow(1, 0, 3), at::zeros({2, 3, 32})));  // zero-initialised table, zero padding
  // Tokens are embedded scaled by sqrt(hidden).
  const at::Tensor expected = model->inner->embed_tokens->forward(batch.inputs) * std::sqrt(32.0);
  EXPECT_TRUE(at::allclose(x.narrow(1, 3, 8), expected));
}

TEST(TrmModel, CausalOutputsIgnoreLaterTokens) {
  trm::ModelConfig c = tiny_config();
  c.causal = true;
  at::manual_seed(3);
  trm::Trm model(c);
  model->eval();
  const trm::BatchTensors a = make_batch(c, 2, 3);
  trm::BatchTensors b = a;
  b.inputs = a.inputs.clone();
  b.inputs.narrow(1, 5, 3).add_(1).remainder_(c.vocab_size);
  trm::Carry ca = model->initial_carry(a), cb = model->initial_carry(b);
  for (int step = 0; step < 2; ++step) {  // also through the carry of a second step
    const trm::StepOutput oa = model->forward(ca, a), ob = model->forward(cb, b);
    EXPECT_TRUE(at::allclose(oa.logits.narrow(1, 0, 5), ob.logits.narrow(1, 0, 5), 1e-5, 1e-6)) << step;
    EXPECT_FALSE(at::allclose(oa.logits.narrow(1, 5, 3), ob.logits.narrow(1, 5, 3))) << step;
  }
  // The same change reaches position 0 without the mask.
  c.causal = false;
  trm::Trm full(c);
  full->eval();
  trm::Carry fa = full->initial_carry(a), fb = full->initial_carry(b);
  EXPECT_FALSE(at::allclose(full->forward(fa, a).logits.select(1, 0), full->forward(fb, b).logits.select(1, 0)));
}

// Grads of every parameter after backward of a fixed function of the outputs.
std::vector<at::Tensor> grads_of(trm::Trm& model) {
  std::vector<at::Tensor> grads;
  for (auto& p : model->parameters()) grads.push_back(p.grad().defined() ? p.grad().clone() : at::zeros_like(p));
  for (auto& p : model->parameters()) p.mutable_grad() = at::Tensor();
  return grads;
}

at::Tensor objective(const at::Tensor& logits, const at::Tensor& q_halt) {
  return logits.square().mean() + q_halt.sum() + logits.select(-1, 1).sum();
}

TEST(TrmModel, OnlyTheLastHCycleKeepsGradientsAndTheCarryIsDetached) {
  trm::ModelConfig c = tiny_config();
  c.h_cycles = 3;
  at::manual_seed(4);
  trm::Trm model(c);
  {
    at::NoGradGuard no_grad;  // a non-zero q_head, so that its path carries gradient too
    model->inner->q_head->weight.normal_(0, 0.1);
  }
  const trm::BatchTensors batch = make_batch(c, 2, 4);
  trm::Carry carry = model->initial_carry(batch);
  const trm::StepOutput out = model->forward(carry, batch);
  EXPECT_FALSE(carry.z_h.requires_grad());
  EXPECT_FALSE(carry.z_l.requires_grad());
  objective(out.logits, out.q_halt_logits).backward();
  const std::vector<at::Tensor> model_grads = grads_of(model);

  // By hand: the first h_cycles-1 cycles' result enters the last cycle as a constant.
  auto& inner = *model->inner;
  const at::Tensor x = inner.input_embeddings(batch.inputs, batch.puzzle_identifiers);
  at::Tensor z_h = inner.H_init.expand({2, 8, 32}), z_l = inner.L_init.expand({2, 8, 32});
  {
    at::NoGradGuard no_grad;
    for (int h = 0; h < 2; ++h) {
      for (int l = 0; l < 2; ++l) z_l = inner.net(z_l, z_h + x);
      z_h = inner.net(z_h, z_l);
    }
  }
  for (int l = 0; l < 2; ++l) z_l = inner.net(z_l, z_h + x);
  z_h = inner.net(z_h, z_l);
  const at::Tensor logits = inner.lm_head->forward(z_h);
  const at::Tensor q_halt = inner.q_head->forward(z_h.select(1, 0)).select(-1, 0);
  EXPECT_TRUE(at::allclose(logits, out.logits, 1e-5, 1e-6));
  objective(logits, q_halt).backward();
  const std::vector<at::Tensor> manual_grads = grads_of(model);
  ASSERT_EQ(model_grads.size(), manual_grads.size());
  for (size_t i = 0; i < model_grads.size(); ++i)
    EXPECT_TRUE(at::allclose(model_grads[i], manual_grads[i], 1e-4, 1e-6)) << i;

  // Backpropagating through every cycle gives other gradients: the check above can fail.
  const at::Tensor x2 = inner.input_embeddings(batch.inputs, batch.puzzle_identifiers);
  z_h = inner.H_init.expand({2, 8, 32});
  z_l = inner.L_init.expand({2, 8, 32});
  for (int h = 0; h < 3; ++h) {
    for (int l = 0; l < 2; ++l) z_l = inner.net(z_l, z_h + x2);
    z_h = inner.net(z_h, z_l);
  }
  objective(inner.lm_head->forward(z_h), inner.q_head->forward(z_h.select(1, 0)).select(-1, 0)).backward();
  const std::vector<at::Tensor> full_grads = grads_of(model);
  bool any_differs = false;
  for (size_t i = 0; i < full_grads.size(); ++i) any_differs |= !at::allclose(full_grads[i], manual_grads[i], 1e-4, 1e-6);
  EXPECT_TRUE(any_differs);
}

TEST(TrmModel, GradientCheckpointingGivesTheSameGradients) {
  trm::ModelConfig c = tiny_config();
  c.puzzle_emb_ndim = 32;
  c.num_puzzle_identifiers = 4;
  at::manual_seed(5);
  trm::Trm plain(c);
  c.gradient_checkpointing = true;
  trm::Trm checkpointed(c);
  {
    at::NoGradGuard no_grad;
    for (auto* m : {&plain, &checkpointed}) (*m)->puzzle_embedding()->weights.normal_(0, 0.1);
    auto src = plain->named_parameters();
    for (auto& item : checkpointed->named_parameters()) item.value().copy_(src[item.key()]);
    auto src_buffers = plain->named_buffers();
    for (auto& item : checkpointed->named_buffers()) item.value().copy_(src_buffers[item.key()]);
  }
  const trm::BatchTensors batch = make_batch(c, 3, 5);
  std::vector<at::Tensor> grads[2], puzzle_grads;
  int k = 0;
  for (auto* m : {&plain, &checkpointed}) {
    trm::Carry carry = (*m)->initial_carry(batch);
    const trm::StepOutput out = (*m)->forward(carry, batch);
    trm::act_loss(out, carry, trm::LossKind::kStablemax).loss.backward();
    grads[k++] = grads_of(*m);
    ASSERT_TRUE((*m)->puzzle_embedding()->local_weights().grad().defined());
    puzzle_grads.push_back((*m)->puzzle_embedding()->local_weights().grad());
  }
  ASSERT_EQ(grads[0].size(), grads[1].size());
  for (size_t i = 0; i < grads[0].size(); ++i) {
    EXPECT_TRUE(at::allclose(grads[0][i], grads[1][i], 1e-5, 1e-7)) << i;
    EXPECT_GT(grads[0][i].abs().sum().item<double>(), 0.0) << i;  // every parameter is trained
  }
  EXPECT_TRUE(at::allclose(puzzle_grads[0], puzzle_grads[1], 1e-5, 1e-7));
}

TEST(TrmModel, RunsUnderCpuBf16Autocast) {
  trm::ModelConfig c = tiny_config();
  c.puzzle_emb_ndim = 32;
  at::manual_seed(6);
  trm::Trm model(c);
  const trm::BatchTensors batch = make_batch(c, 2, 6);
  trm::Carry carry = model->initial_carry(batch);
  trm::StepOutput out;
  {
    mlh::rt::AutocastScope autocast(mlh::rt::Precision::kBf16, at::Device(at::kCPU));
    out = model->forward(carry, batch);
  }
  EXPECT_EQ(out.q_halt_logits.scalar_type(), at::kFloat);
  const trm::ActLoss loss = trm::act_loss(out, carry, trm::LossKind::kStablemax);
  EXPECT_TRUE(std::isfinite(loss.loss.item<double>()));
  loss.loss.backward();
  for (auto& item : model->named_parameters()) {
    const at::Tensor& p = item.value();
    ASSERT_TRUE(p.grad().defined()) << item.key();
    EXPECT_TRUE(at::isfinite(p.grad()).all().item<bool>());
  }
  // The states travel in bf16, as the reference's forward_dtype keeps them, and stay so from
  // step to step; without autocast the next step is back in float32.
  EXPECT_EQ(carry.z_h.scalar_type(), at::kBFloat16);
  EXPECT_EQ(carry.z_l.scalar_type(), at::kBFloat16);
  {
    at::NoGradGuard no_grad;
    mlh::rt::AutocastScope autocast(mlh::rt::Precision::kBf16, at::Device(at::kCPU));
    out = model->forward(carry, batch);
  }
  EXPECT_EQ(carry.z_h.scalar_type(), at::kBFloat16);
  EXPECT_EQ(out.logits.scalar_type(), at::kBFloat16);
  {
    at::NoGradGuard no_grad;
    out = model->forward(carry, batch);
  }
  EXPECT_EQ(carry.z_h.scalar_type(), at::kFloat);
  EXPECT_EQ(out.logits.scalar_type(), at::kFloat);
}

TEST(TrmModel, SavedAndReloadedModelGivesIdenticalOutputs) {
  trm::ModelConfig c = tiny_config();
  c.puzzle_emb_ndim = 32;
  c.num_puzzle_identifiers = 4;
  at::manual_seed(7);
  trm::Trm model(c);
  {
    at::NoGradGuard no_grad;
    model->puzzle_embedding()->weights.normal_();
    model->inner->q_head->weight.normal_();
  }
  model->eval();
  const trm::BatchTensors batch = make_batch(c, 3, 7);
  trm::Carry carry = model->initial_carry(batch);
  model->forward(carry, batch);  // a non-trivial carry
  const trm::Carry saved_carry = carry;

  std::stringstream stream;
  mlh::rt::TrainingState state;
  state.add("model", *model);
  mlh::rt::save_training_state(state, stream);

  at::manual_seed(8);
  trm::Trm reloaded(c);
  reloaded->eval();
  mlh::rt::TrainingState target;
  target.add("model", *reloaded);
  mlh::rt::load_training_state(target, stream, at::Device(at::kCPU));

  trm::Carry c1 = saved_carry, c2 = saved_carry;
  const trm::StepOutput a = model->forward(c1, batch), b = reloaded->forward(c2, batch);
  EXPECT_TRUE(at::equal(a.logits, b.logits));
  EXPECT_TRUE(at::equal(a.q_halt_logits, b.q_halt_logits));
  EXPECT_TRUE(at::equal(c1.z_h, c2.z_h));
  EXPECT_TRUE(at::equal(model->puzzle_embedding()->weights, reloaded->puzzle_embedding()->weights));

  // A model of another shape does not load, and the error says what differs.
  c.hidden = 64;
  trm::Trm other(c);
  mlh::rt::TrainingState other_state;
  other_state.add("model", *other);
  stream.clear();
  stream.seekg(0);
  EXPECT_THROW(mlh::rt::load_training_state(other_state, stream, at::Device(at::kCPU)), mlh::Error);
}

}  // namespace
