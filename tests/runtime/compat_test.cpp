// compat.hpp: what differs between LibTorch 1.13 and 2.x behaves the same in both builds.
#include <gtest/gtest.h>

#include <torch/optim/adam.h>

#include <cmath>

#include <mlh/runtime/compat.hpp>

namespace {

using namespace mlh::rt;

// softmax(q k^T / sqrt(d)) v in float64, the definition the fused kernel must meet.
at::Tensor attention_by_definition(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal) {
  const at::Tensor q64 = q.to(at::kDouble), k64 = k.to(at::kDouble), v64 = v.to(at::kDouble);
  at::Tensor scores = at::matmul(q64, k64.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
  if (causal) scores = scores.masked_fill(at::ones({q.size(-2), k.size(-2)}, at::kBool).triu(1), -INFINITY);
  return at::matmul(at::softmax(scores, -1), v64);
}

TEST(Compat, ScaledDotProductAttentionMatchesTheDefinition) {
  at::manual_seed(3);
  const at::Tensor q = at::randn({2, 4, 9, 16}), k = at::randn({2, 4, 9, 16}), v = at::randn({2, 4, 9, 16});
  for (bool causal : {false, true}) {
    const at::Tensor expected = attention_by_definition(q, k, v, causal);
    const at::Tensor fp32 = compat::scaled_dot_product_attention(q, k, v, causal);
    EXPECT_EQ(fp32.scalar_type(), at::kFloat);
    EXPECT_LT((fp32.to(at::kDouble) - expected).abs().max().item<double>(), 1e-5) << "causal " << causal;
    const at::Tensor bf16 = compat::scaled_dot_product_attention(q.to(at::kBFloat16), k.to(at::kBFloat16),
                                                                 v.to(at::kBFloat16), causal);
    EXPECT_EQ(bf16.scalar_type(), at::kBFloat16);
    EXPECT_LT((bf16.to(at::kDouble) - expected).abs().max().item<double>(), 5e-2) << "causal " << causal;
  }
}

TEST(Compat, AttentionInPlainOpsMatchesTheDefinition) {
  // The path 1.13, and 2.x in reduced precision on the CPU, take.
  at::manual_seed(5);
  const at::Tensor q = at::randn({2, 2, 7, 8}), k = at::randn({2, 2, 7, 8}), v = at::randn({2, 2, 7, 8});
  for (bool causal : {false, true}) {
    const at::Tensor plain = compat::attention_in_plain_ops(q, k, v, causal);
    EXPECT_LT((plain.to(at::kDouble) - attention_by_definition(q, k, v, causal)).abs().max().item<double>(), 1e-5);
  }
}

TEST(Compat, AttentionInPlainOpsGradientsMatchTheDefinitionInFloatAndBf16) {
  at::manual_seed(6);
  const at::Tensor q0 = at::randn({2, 3, 7, 8}), k0 = at::randn({2, 3, 7, 8}), v0 = at::randn({2, 3, 7, 8});
  const at::Tensor g = at::randn({2, 3, 7, 8});
  at::Tensor qd = q0.to(at::kDouble).requires_grad_(), kd = k0.to(at::kDouble).requires_grad_(),
             vd = v0.to(at::kDouble).requires_grad_();
  attention_by_definition(qd, kd, vd, true).backward(g.to(at::kDouble));
  // bf16 rounds the inputs, the scores, the probabilities and each gradient: a looser bound.
  for (auto [dtype, tolerance] : {std::pair{at::kFloat, 1e-4}, std::pair{at::kBFloat16, 1e-1}}) {
    at::Tensor q = q0.to(dtype).clone().requires_grad_(), k = k0.to(dtype).clone().requires_grad_(),
               v = v0.to(dtype).clone().requires_grad_();
    const at::Tensor out = compat::attention_in_plain_ops(q, k, v, true);
    EXPECT_EQ(out.scalar_type(), dtype);
    out.backward(g.to(dtype));
    for (auto [plain, exact] : {std::pair{q, qd}, std::pair{k, kd}, std::pair{v, vd}}) {
      ASSERT_EQ(plain.grad().scalar_type(), dtype);
      EXPECT_LT((plain.grad().to(at::kDouble) - exact.grad()).abs().max().item<double>(), tolerance) << dtype;
    }
  }
}

TEST(Compat, CausalAttentionOfTheFirstPositionIsItsValue) {
  const at::Tensor q = at::randn({1, 1, 5, 8}), k = at::randn({1, 1, 5, 8}), v = at::randn({1, 1, 5, 8});
  const at::Tensor out = compat::scaled_dot_product_attention(q, k, v, /*causal=*/true);
  EXPECT_TRUE(at::allclose(out.select(2, 0), v.select(2, 0), 1e-5, 1e-6));
}

TEST(Compat, AttentionGradientsMatchTheDefinition) {
  at::manual_seed(4);
  const at::Tensor q0 = at::randn({1, 2, 6, 8}), k0 = at::randn({1, 2, 6, 8}), v0 = at::randn({1, 2, 6, 8});
  at::Tensor q = q0.clone().requires_grad_(), k = k0.clone().requires_grad_(), v = v0.clone().requires_grad_();
  compat::scaled_dot_product_attention(q, k, v, true).square().sum().backward();
  at::Tensor qd = q0.to(at::kDouble).requires_grad_(), kd = k0.to(at::kDouble).requires_grad_(),
             vd = v0.to(at::kDouble).requires_grad_();
  attention_by_definition(qd, kd, vd, true).square().sum().backward();
  for (auto [fused, exact] : {std::pair{q, qd}, std::pair{k, kd}, std::pair{v, vd}})
    EXPECT_LT((fused.grad().to(at::kDouble) - exact.grad()).abs().max().item<double>(), 1e-4);
}

TEST(Compat, OptimizerStateKeyFindsTheParametersState) {
  at::Tensor w = at::ones({3}).requires_grad_();
  at::Tensor other = at::ones({3}).requires_grad_();
  torch::optim::Adam adam(std::vector<at::Tensor>{w, other}, torch::optim::AdamOptions(0.1));
  w.mutable_grad() = at::ones({3});
  adam.step();  // only w has a gradient: only w gets a state
  auto& states = adam.state();
  ASSERT_TRUE(states.count(compat::optimizer_state_key(w)));
  EXPECT_FALSE(states.count(compat::optimizer_state_key(other)));
  const auto& state = static_cast<torch::optim::AdamParamState&>(*states.at(compat::optimizer_state_key(w)));
  EXPECT_EQ(state.step(), 1);
  EXPECT_TRUE(at::allclose(state.exp_avg(), at::full({3}, 0.1)));  // (1 - beta1) * grad
}

}  // namespace
