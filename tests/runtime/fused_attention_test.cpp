// short_attention against attention computed in double with ATen's ops: outputs and the three
// gradients, causal or not, sizes that are and are not multiples of a vector, the no-grad path,
// extreme scores, and results that do not depend on the thread count; what it refuses, and
// mlh::rt::attention's fallback for what it refuses. attention_from_qkv against the three steps
// it stands for, bit for bit, and its fallback.
#include <algorithm>
#include <limits>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <mlh/runtime/fused_attention.hpp>
#include <mlh/runtime/fused_ops.hpp>
#include <torch/autograd.h>

namespace {

at::Tensor attention_in_double(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal) {
  const at::Tensor qd = q.to(at::kDouble), kd = k.to(at::kDouble), vd = v.to(at::kDouble);
  at::Tensor scores = at::matmul(qd, kd.transpose(-1, -2)) / std::sqrt(static_cast<double>(q.size(-1)));
  if (causal) {
    const at::Tensor future = at::ones({q.size(-2), q.size(-2)}, q.options().dtype(at::kBool)).triu(1);
    scores = scores.masked_fill(future, -std::numeric_limits<double>::infinity());
  }
  return at::matmul(at::softmax(scores, -1), vd);
}

void expect_close(const at::Tensor& got, const at::Tensor& want, const char* what, double tolerance = 2e-5) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  EXPECT_EQ(got.scalar_type(), at::kFloat) << what;
  const double err = (got.to(at::kDouble) - want.to(at::kDouble)).abs().max().item<double>();
  const double scale = want.abs().max().item<double>();
  EXPECT_LE(err, tolerance * std::max(1.0, scale)) << what << ": max difference " << err << " against " << scale;
  EXPECT_FALSE(at::isnan(got).any().item<bool>()) << what;
}

struct Case {
  std::vector<int64_t> shape;  // [..., seq, head_dim]
  double spread;               // the inputs' scale: scores grow with its square
  double tolerance = 2e-5;     // relative to the largest value expected
};

// Forward and backward of short_attention against the double reference, causal and not.
void check_against_double(const Case& c) {
  for (const bool causal : {false, true}) {
    SCOPED_TRACE(testing::Message() << "shape " << at::IntArrayRef(c.shape) << (causal ? " causal" : ""));
    at::manual_seed(static_cast<uint64_t>(c.shape[c.shape.size() - 2] * 100 + c.shape.back()));
    const at::Tensor q0 = at::randn(c.shape) * c.spread, k0 = at::randn(c.shape) * c.spread, v0 = at::randn(c.shape);
    const at::Tensor up = at::randn(c.shape);
    at::Tensor q = q0.clone().requires_grad_(), k = k0.clone().requires_grad_(), v = v0.clone().requires_grad_();
    ASSERT_TRUE(mlh::rt::short_attention_applies(q, k, v));
    const at::Tensor out = mlh::rt::short_attention(q, k, v, causal);
    (out * up).sum().backward();
    at::Tensor qd = q0.to(at::kDouble).requires_grad_(), kd = k0.to(at::kDouble).requires_grad_(),
               vd = v0.to(at::kDouble).requires_grad_();
    (attention_in_double(qd, kd, vd, causal) * up.to(at::kDouble)).sum().backward();
    expect_close(out, attention_in_double(q0, k0, v0, causal), "output", c.tolerance);
    expect_close(q.grad(), qd.grad(), "q's gradient", c.tolerance);
    expect_close(k.grad(), kd.grad(), "k's gradient", c.tolerance);
    expect_close(v.grad(), vd.grad(), "v's gradient", c.tolerance);
    at::NoGradGuard no_grad;
    EXPECT_TRUE(at::equal(mlh::rt::short_attention(q0, k0, v0, causal), out.detach())) << "the no-grad path";
  }
}

TEST(ShortAttention, MatchesAttentionInDoubleAtTrmShapes) {
  check_against_double({{4, 4, 81, 32}, 1.0});  // TRM's small model: 81 positions, head_dim 32
  check_against_double({{2, 2, 97, 64}, 1.0});  // the default model's head_dim, 16 prefix positions
}

TEST(ShortAttention, MatchesAttentionInDoubleAtSizesOffTheVectorWidth) {
  check_against_double({{2, 3, 7, 24}, 1.0});    // fewer positions than a vector, head_dim 24
  check_against_double({{1, 1, 1, 8}, 1.0});     // one position: the output is v
  check_against_double({{3, 33, 48}, 1.0});      // three dimensions, 33 positions
  check_against_double({{1, 2, 256, 16}, 1.0});  // the longest it takes
}

TEST(ShortAttention, StaysFiniteAndExactWithScoresInTheHundreds) {
  // Scores of +-several hundred: exp overflows unless each row is shifted by its largest score.
  // Float's rounding of such a score is already about 1.5e-5 in the exponent, so the tolerance
  // is wider (this CPU's kernels reach half of 2e-5; other instruction sets round otherwise).
  check_against_double({{1, 2, 40, 32}, 8.0, 6e-5});
}

TEST(ShortAttention, ResultsDoNotDependOnTheThreadCount) {
  at::manual_seed(3);
  const at::Tensor q0 = at::randn({8, 4, 81, 32}), k0 = at::randn({8, 4, 81, 32}), v0 = at::randn({8, 4, 81, 32});
  auto run = [&](int threads) {
    at::set_num_threads(threads);
    at::Tensor q = q0.clone().requires_grad_(), k = k0.clone().requires_grad_(), v = v0.clone().requires_grad_();
    const at::Tensor out = mlh::rt::short_attention(q, k, v, false);
    out.square().sum().backward();
    return std::vector<at::Tensor>{out.detach(), q.grad(), k.grad(), v.grad()};
  };
  const int threads = at::get_num_threads();
  const auto one = run(1), two = run(std::max(threads, 2));
  at::set_num_threads(threads);
  for (size_t i = 0; i < one.size(); ++i) EXPECT_TRUE(at::equal(one[i], two[i])) << "tensor " << i;
}

TEST(ShortAttention, TakesStridedInputsAsTheirValues) {
  at::manual_seed(5);
  const at::Tensor q = at::randn({2, 81, 4, 32}).transpose(1, 2), k = at::randn({2, 81, 4, 32}).transpose(1, 2),
                   v = at::randn({2, 81, 4, 32}).transpose(1, 2);
  ASSERT_FALSE(q.is_contiguous());
  expect_close(mlh::rt::short_attention(q, k, v, true), attention_in_double(q, k, v, true), "output");
}

TEST(ShortAttention, RefusesWhatItDoesNotComputeAndAttentionFallsBackForIt) {
  const at::Tensor q = at::randn({1, 2, 9, 16});
  EXPECT_FALSE(mlh::rt::short_attention_applies(q.to(at::kBFloat16), q.to(at::kBFloat16), q.to(at::kBFloat16)));
  EXPECT_FALSE(mlh::rt::short_attention_applies(q.to(at::kDouble), q.to(at::kDouble), q.to(at::kDouble)));
  EXPECT_FALSE(mlh::rt::short_attention_applies(q, q, at::randn({1, 2, 9, 8})));  // v of another head_dim
  const at::Tensor long_q = at::randn({1, 1, mlh::rt::kShortAttentionMaxSequence + 1, 8});
  EXPECT_FALSE(mlh::rt::short_attention_applies(long_q, long_q, long_q));
  EXPECT_THROW(mlh::rt::short_attention(long_q, long_q, long_q, false), c10::Error);
  // attention() takes LibTorch's kernels for these, with the same result.
  expect_close(mlh::rt::attention(long_q, long_q, long_q, true), attention_in_double(long_q, long_q, long_q, true),
               "a sequence too long, through LibTorch");
  const at::Tensor qd = q.to(at::kDouble);
  EXPECT_TRUE(at::allclose(mlh::rt::attention(qd, qd, qd, false), attention_in_double(qd, qd, qd, false)));
}

// split_heads_rotary, attention, the heads merged: what attention_from_qkv stands for.
at::Tensor three_steps(const at::Tensor& qkv, int64_t heads, const at::Tensor& cos, const at::Tensor& sin, bool causal) {
  const auto [q, k, v] = mlh::rt::split_heads_rotary(qkv, heads, cos, sin);
  return mlh::rt::attention(q, k, v, causal).transpose(1, 2).reshape({qkv.size(0), qkv.size(1), -1});
}

struct QkvCase {
  int64_t batch, seq, heads, head_dim;
  bool rotary;
};

// The output and qkv's gradient, through attention_from_qkv and through the three steps.
std::array<at::Tensor, 4> both_ways(const QkvCase& c, bool causal) {
  at::manual_seed(static_cast<uint64_t>(c.seq * 1000 + c.head_dim * 10 + c.heads));
  const at::Tensor qkv0 = at::randn({c.batch, c.seq, 3 * c.heads * c.head_dim});
  const at::Tensor cos = c.rotary ? at::randn({c.seq, c.head_dim}) : at::Tensor();
  const at::Tensor sin = c.rotary ? at::randn({c.seq, c.head_dim}) : at::Tensor();
  const at::Tensor up = at::randn({c.batch, c.seq, c.heads * c.head_dim});
  at::Tensor fused_in = qkv0.clone().requires_grad_(), steps_in = qkv0.clone().requires_grad_();
  EXPECT_TRUE(mlh::rt::attention_from_qkv_applies(fused_in, c.heads, cos, sin));
  const at::Tensor fused = mlh::rt::attention_from_qkv(fused_in, c.heads, cos, sin, causal);
  const at::Tensor steps = three_steps(steps_in, c.heads, cos, sin, causal);
  (fused * up).sum().backward();
  (steps * up).sum().backward();
  {
    at::NoGradGuard no_grad;
    EXPECT_TRUE(at::equal(mlh::rt::attention_from_qkv(qkv0, c.heads, cos, sin, causal), fused.detach()))
        << "the no-grad path";
  }
  return {fused.detach(), steps.detach(), fused_in.grad(), steps_in.grad()};
}

TEST(AttentionFromQkv, GivesTheThreeStepsOutputAndGradientBitForBit) {
  // TRM's head shape; one off the vector width, with an odd head count; no rotary tables.
  for (const QkvCase& c : {QkvCase{3, 81, 4, 32, true}, QkvCase{2, 19, 3, 10, true}, QkvCase{2, 33, 2, 16, false}})
    for (const bool causal : {false, true}) {
      SCOPED_TRACE(testing::Message() << "batch " << c.batch << ", seq " << c.seq << ", " << c.heads << " heads of "
                                      << c.head_dim << (c.rotary ? ", rotary" : "") << (causal ? ", causal" : ""));
      const auto [fused, steps, fused_grad, steps_grad] = both_ways(c, causal);
      ASSERT_EQ(fused.sizes(), steps.sizes());
      EXPECT_TRUE(at::equal(fused, steps)) << "output: max difference " << (fused - steps).abs().max().item<double>();
      EXPECT_TRUE(at::equal(fused_grad, steps_grad))
          << "qkv's gradient: max difference " << (fused_grad - steps_grad).abs().max().item<double>();
    }
}

TEST(AttentionFromQkv, ResultsDoNotDependOnTheThreadCount) {
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const auto one = both_ways({5, 81, 4, 32, true}, false);
  at::set_num_threads(3);
  const auto three = both_ways({5, 81, 4, 32, true}, false);
  at::set_num_threads(threads);
  EXPECT_TRUE(at::equal(one[0], three[0]));
  EXPECT_TRUE(at::equal(one[2], three[2]));
}

TEST(AttentionFromQkv, RefusesWhatItDoesNotComputeAndFallsBackToTheThreeSteps) {
  const at::Tensor qkv = at::randn({2, 9, 3 * 2 * 8}), cos = at::randn({9, 8}), sin = at::randn({9, 8});
  EXPECT_FALSE(mlh::rt::attention_from_qkv_applies(qkv.to(at::kDouble), 2, cos, sin)) << "double";
  EXPECT_FALSE(mlh::rt::attention_from_qkv_applies(qkv, 5, cos, sin)) << "heads that do not divide the width";
  EXPECT_FALSE(mlh::rt::attention_from_qkv_applies(qkv, 2, cos.narrow(0, 0, 8), sin.narrow(0, 0, 8)))
      << "tables of another length";
  EXPECT_FALSE(mlh::rt::attention_from_qkv_applies(qkv, 2, cos, at::Tensor())) << "cos without sin";
  const at::Tensor long_qkv = at::randn({1, mlh::rt::kShortAttentionMaxSequence + 1, 3 * 2 * 8});
  EXPECT_FALSE(mlh::rt::attention_from_qkv_applies(long_qkv, 2, at::Tensor(), at::Tensor())) << "too long";
  const at::Tensor qd = qkv.to(at::kDouble);
  EXPECT_TRUE(at::allclose(mlh::rt::attention_from_qkv(qd, 2, cos, sin, true), three_steps(qd, 2, cos, sin, true)));
  EXPECT_TRUE(at::allclose(mlh::rt::attention_from_qkv(long_qkv, 2, at::Tensor(), at::Tensor(), false),
                           three_steps(long_qkv, 2, at::Tensor(), at::Tensor(), false)));
}

}  // namespace
