// The reference's layers: RMSNorm, SwiGLU's size rule, RoPE, the truncated-normal init,
// attention's causal mask and the mlp_t block.
#include <cmath>
#include <utility>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <mlh/runtime/fused_ops.hpp>

#include "helpers.hpp"
#include "model/layers.hpp"

namespace {

TEST(TrmLayers, RmsNormHasUnitRootMeanSquareAndNoWeight) {
  at::manual_seed(0);
  const at::Tensor x = at::randn({3, 5, 16}) * 7.0 + 2.0;
  const at::Tensor y = mlh::rt::add_rms_norm(x, at::Tensor(), 1e-5);
  const at::Tensor expected = x / at::sqrt(x.square().mean(-1, true) + 1e-5);
  EXPECT_TRUE(at::allclose(y, expected, 1e-5, 1e-6));
  EXPECT_TRUE(at::allclose(y.square().mean(-1), at::ones({3, 5}), 1e-4, 1e-4));
  // bf16 in, bf16 out (computed in float32 inside).
  EXPECT_EQ(mlh::rt::add_rms_norm(x.to(at::kBFloat16), at::Tensor(), 1e-5).scalar_type(), at::kBFloat16);
}

TEST(TrmLayers, SwigluIntermediateRoundsUpToMultipleOf256) {
  EXPECT_EQ(trm::swiglu_intermediate(512, 4.0), 1536);  // round(1365.33) = 1365 -> 1536
  EXPECT_EQ(trm::swiglu_intermediate(384, 4.0), 1024);  // exactly 1024
  EXPECT_EQ(trm::swiglu_intermediate(32, 2.0), 256);    // small sizes still get 256
  EXPECT_EQ(trm::swiglu_intermediate(600, 4.0), 1792);  // 1600 -> 1792
  trm::SwiGLU mlp(32, 4.0);
  EXPECT_EQ(mlp->intermediate(), 256);
  EXPECT_EQ(mlp->gate_up_proj->weight.sizes(), at::IntArrayRef({512, 32}));
  EXPECT_EQ(mlp->down_proj->weight.sizes(), at::IntArrayRef({32, 256}));
  EXPECT_FALSE(mlp->gate_up_proj->bias.defined());
}

TEST(TrmLayers, SwigluComputesSiluGateTimesUp) {
  at::manual_seed(1);
  trm::SwiGLU mlp(8, 1.0);
  const at::Tensor x = at::randn({2, 8});
  const at::Tensor gu = at::matmul(x, mlp->gate_up_proj->weight.t());
  const int64_t inter = mlp->intermediate();
  const at::Tensor expected =
      at::matmul(at::silu(gu.narrow(1, 0, inter)) * gu.narrow(1, inter, inter), mlp->down_proj->weight.t());
  EXPECT_TRUE(at::allclose(mlp->forward(x), expected, 1e-5, 1e-6));
}

// q and k of one head at every position, rotated as the attention rotates them.
std::pair<at::Tensor, at::Tensor> rotated(const at::Tensor& q, const at::Tensor& k, const trm::RotaryEmbedding& rope) {
  const at::Tensor qkv = at::cat({q, k, at::zeros_like(q)}, -1);  // [1, S, 3 * 1 * D]
  const auto parts = mlh::rt::split_heads_rotary(qkv, 1, rope->cos_cached, rope->sin_cached);
  return {parts[0].squeeze(0).squeeze(0), parts[1].squeeze(0).squeeze(0)};  // [S, D]
}

TEST(TrmLayers, RopeIsIdentityAtPositionZeroAndRelative) {
  trm::RotaryEmbedding rope(8, 10, 10000.0);
  EXPECT_EQ(rope->cos_cached.sizes(), at::IntArrayRef({10, 8}));
  at::manual_seed(2);
  const at::Tensor q = at::randn({1, 10, 8}), k = at::randn({1, 10, 8});
  const auto [rq, rk] = rotated(q, k, rope);
  EXPECT_TRUE(at::equal(rq[0], q[0][0]));
  EXPECT_FALSE(at::allclose(rq[3], q[0][3]));
  // Same vectors at every position: <R_m q, R_n k> depends only on m - n.
  const auto [a, b] = rotated(q.narrow(1, 0, 1).expand({1, 10, 8}).contiguous(),
                              k.narrow(1, 0, 1).expand({1, 10, 8}).contiguous(), rope);
  EXPECT_NEAR(at::dot(a[5], b[2]).item<double>(), at::dot(a[4], b[1]).item<double>(), 1e-4);
  EXPECT_NEAR(at::dot(a[9], b[6]).item<double>(), at::dot(a[3], b[0]).item<double>(), 1e-4);
  // The half-rotation convention: the first half pairs with the second, [x1, x2] at angle t ->
  // [x1 cos t - x2 sin t, x2 cos t + x1 sin t].
  const at::Tensor x = at::arange(1, 9, at::kFloat).view({1, 1, 8});
  const at::Tensor turned = rotated(x.expand({1, 10, 8}).contiguous(), x.expand({1, 10, 8}).contiguous(), rope).first[1];
  const at::Tensor c = rope->cos_cached[1], sn = rope->sin_cached[1], x1 = x[0][0].narrow(0, 0, 4), x2 = x[0][0].narrow(0, 4, 4);
  EXPECT_TRUE(at::allclose(turned, at::cat({x1 * c.narrow(0, 0, 4) - x2 * sn.narrow(0, 0, 4),
                                            x2 * c.narrow(0, 4, 4) + x1 * sn.narrow(0, 4, 4)})));
}

TEST(TrmLayers, TruncNormalHasRequestedStdAndBounds) {
  at::manual_seed(3);
  at::Tensor t = at::empty({200000});
  trm::trunc_normal_(t, 0.5);
  EXPECT_NEAR(t.std().item<double>(), 0.5, 0.01);
  EXPECT_NEAR(t.mean().item<double>(), 0.0, 0.01);
  // Cut at 2 (corrected) standard deviations: about 1.14 * 0.5.
  EXPECT_LT(t.abs().max().item<double>(), 2 * 0.5 * 1.15);
  at::Tensor z = at::ones({4});
  trm::trunc_normal_(z, 0.0);
  EXPECT_TRUE(at::equal(z, at::zeros({4})));
}

TEST(TrmLayers, CastedLinearIsLecunInitialisedWithZeroBias) {
  at::manual_seed(4);
  trm::CastedLinear plain(400, 300);
  EXPECT_FALSE(plain->bias.defined());
  EXPECT_NEAR(plain->weight.std().item<double>(), 1.0 / 20.0, 0.002);
  trm::CastedLinear with_bias(4, 3, true);
  EXPECT_TRUE(at::equal(with_bias->bias, at::zeros({3})));
  EXPECT_EQ(with_bias->named_parameters().size(), 2u);
}

TEST(TrmLayers, CausalAttentionIgnoresLaterPositions) {
  at::manual_seed(5);
  trm::RotaryEmbedding rope(8, 6, 10000.0);
  trm::Attention causal(16, 2, true), full(16, 2, false);
  {
    at::NoGradGuard no_grad;
    full->qkv_proj->weight.copy_(causal->qkv_proj->weight);
    full->o_proj->weight.copy_(causal->o_proj->weight);
  }
  const at::Tensor x = at::randn({2, 6, 16});
  at::Tensor changed = x.clone();
  changed.narrow(1, 4, 2).add_(1.0);  // positions 4 and 5
  const auto& cos = rope->cos_cached;
  const auto& sin = rope->sin_cached;
  const at::Tensor a = causal->forward(x, cos, sin), b = causal->forward(changed, cos, sin);
  EXPECT_TRUE(at::allclose(a.narrow(1, 0, 4), b.narrow(1, 0, 4), 1e-6, 1e-7));
  EXPECT_FALSE(at::allclose(a.narrow(1, 4, 2), b.narrow(1, 4, 2)));
  // Without the mask every position sees the change; position 0 of both is the same query on
  // one key when causal, so the outputs differ there.
  const at::Tensor c = full->forward(x, cos, sin), d = full->forward(changed, cos, sin);
  EXPECT_FALSE(at::allclose(c.narrow(1, 0, 4), d.narrow(1, 0, 4)));
  EXPECT_FALSE(at::allclose(a.select(1, 0), c.select(1, 0)));
}

TEST(TrmLayers, MlpTBlockMixesAcrossTheSequence) {
  at::manual_seed(6);
  trm::ModelConfig c = trm_test::tiny_config();
  c.seq_len = 6;
  c.hidden = 16;
  c.expansion = 2.0;
  c.mlp_t = true;
  trm::Block block(c);
  EXPECT_FALSE(block->self_attn);
  ASSERT_TRUE(block->mlp_t);
  EXPECT_EQ(block->mlp_t->gate_up_proj->weight.size(1), 6);  // over the sequence axis
  const at::Tensor x = at::randn({2, 6, 16});
  at::Tensor changed = x.clone();
  changed.select(1, 5).add_(1.0);
  const at::Tensor a = block->forward(x, {}, {}), b = block->forward(changed, {}, {});
  EXPECT_EQ(a.sizes(), x.sizes());
  EXPECT_FALSE(at::allclose(a.select(1, 0), b.select(1, 0)));  // position 0 sees position 5
  // Post-norm: the block's output has unit RMS over the hidden axis.
  EXPECT_TRUE(at::allclose(a.square().mean(-1), at::ones({2, 6}), 1e-3, 1e-3));
}

}  // namespace
