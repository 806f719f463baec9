// The fused CPU kernels against the ATen ops they replace: outputs and gradients in float32
// and bfloat16, odd sizes, no residual, a residual of another dtype, the no-grad path, and
// results that do not depend on the thread count.
#include <algorithm>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <mlh/runtime/fused_ops.hpp>
#include <torch/autograd.h>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

namespace {

at::Tensor rms_norm_reference(const at::Tensor& s, double eps) {
  const at::Tensor s32 = s.to(at::kFloat);
  return (s32 * at::rsqrt(s32.square().mean(-1, true) + eps)).to(s.scalar_type());
}

at::Tensor rotate_half(const at::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

// The reference's rotary on [B, S, H, D] in float, cast back.
at::Tensor rotary_reference(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  const at::Tensor xf = x.to(at::kFloat);
  return (xf * cos.unsqueeze(-2) + rotate_half(xf) * sin.unsqueeze(-2)).to(x.scalar_type());
}

// Tolerances: float's rounding for float32; for bf16, a step of its 8-bit mantissa.
double tolerance(at::ScalarType t) { return t == at::kBFloat16 ? 2e-2 : 2e-5; }

void expect_close(const at::Tensor& got, const at::Tensor& want, at::ScalarType t, const char* what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  EXPECT_EQ(got.scalar_type(), want.scalar_type()) << what;
  const double tol = tolerance(t);
  const double err = (got.to(at::kFloat) - want.to(at::kFloat)).abs().max().item<double>();
  const double scale = want.to(at::kFloat).abs().max().item<double>();
  EXPECT_LE(err, tol * std::max(1.0, scale)) << what << ": max difference " << err << " against a largest value " << scale;
}

class FusedOps : public ::testing::TestWithParam<at::ScalarType> {};

TEST_P(FusedOps, AddRmsNormMatchesAtenForwardAndBackward) {
  const at::ScalarType t = GetParam();
  for (const int64_t d : {128, 37, 16, 1}) {
    at::manual_seed(d);
    const at::Tensor x0 = (at::randn({3, 7, d}) * 3 + 1).to(t), r0 = at::randn({3, 7, d}).to(t);
    const at::Tensor up = at::randn({3, 7, d});
    at::Tensor x = x0.clone().requires_grad_(), r = r0.clone().requires_grad_();
    const at::Tensor y = mlh::rt::add_rms_norm(x, r, 1e-5);
    (y.to(at::kFloat) * up).sum().backward();
    at::Tensor xr = x0.clone().requires_grad_(), rr = r0.clone().requires_grad_();
    const at::Tensor yr = rms_norm_reference(xr + rr, 1e-5);
    (yr.to(at::kFloat) * up).sum().backward();
    expect_close(y, yr, t, "output");
    expect_close(x.grad(), xr.grad(), t, "x's gradient");
    expect_close(r.grad(), rr.grad(), t, "residual's gradient");

    // Without a residual; and with no gradient wanted, the same values.
    at::Tensor xa = x0.clone().requires_grad_();
    const at::Tensor ya = mlh::rt::add_rms_norm(xa, at::Tensor(), 1e-5);
    (ya.to(at::kFloat) * up).sum().backward();
    at::Tensor xb = x0.clone().requires_grad_();
    (rms_norm_reference(xb, 1e-5).to(at::kFloat) * up).sum().backward();
    expect_close(ya, rms_norm_reference(x0, 1e-5), t, "output without a residual");
    expect_close(xa.grad(), xb.grad(), t, "gradient without a residual");
    at::NoGradGuard no_grad;
    EXPECT_TRUE(at::equal(mlh::rt::add_rms_norm(x0, r0, 1e-5), y.detach()));
  }
}

TEST_P(FusedOps, SiluMulMatchesAtenForwardAndBackward) {
  const at::ScalarType t = GetParam();
  for (const int64_t n : {256, 21}) {
    at::manual_seed(n);
    const at::Tensor gu0 = (at::randn({5, 3, 2 * n}) * 4).to(t);
    const at::Tensor up = at::randn({5, 3, n});
    at::Tensor gu = gu0.clone().requires_grad_();
    const at::Tensor y = mlh::rt::silu_mul(gu);
    (y.to(at::kFloat) * up).sum().backward();
    at::Tensor gr = gu0.clone().requires_grad_();
    const at::Tensor yr = at::silu(gr.narrow(-1, 0, n)) * gr.narrow(-1, n, n);
    (yr.to(at::kFloat) * up).sum().backward();
    expect_close(y, yr, t, "output");
    expect_close(gu.grad(), gr.grad(), t, "gradient");
  }
  // Large arguments either way stay finite, as silu does.
  const at::Tensor extreme = at::tensor({-200.f, -90.f, 0.f, 90.f, 200.f, 1.f, 1.f, 1.f, 1.f, 1.f}).to(t);
  const at::Tensor y = mlh::rt::silu_mul(extreme);
  EXPECT_TRUE(at::isfinite(y).all().item<bool>());
  expect_close(y, at::silu(extreme.narrow(0, 0, 5)) * extreme.narrow(0, 5, 5), t, "extreme arguments");
}

TEST_P(FusedOps, SplitHeadsRotaryMatchesTheReferencesRotationAndItsGradient) {
  const at::ScalarType t = GetParam();
  const int64_t b = 2, s = 9, h = 3, d = 8;
  at::manual_seed(5);
  const at::Tensor angles = at::outer(at::arange(s, at::kFloat), at::rand({d / 2}));
  const at::Tensor cos = at::cat({angles, angles}, -1).cos(), sin = at::cat({angles, angles}, -1).sin();
  const at::Tensor qkv0 = at::randn({b, s, 3 * h * d}).to(t);
  const std::vector<at::Tensor> ups{at::randn({b, h, s, d}), at::randn({b, h, s, d}), at::randn({b, h, s, d})};

  at::Tensor qkv = qkv0.clone().requires_grad_();
  const auto [q, k, v] = mlh::rt::split_heads_rotary(qkv, h, cos, sin);
  EXPECT_TRUE(q.is_contiguous() && k.is_contiguous() && v.is_contiguous());
  ((q.to(at::kFloat) * ups[0]).sum() + (k.to(at::kFloat) * ups[1]).sum() + (v.to(at::kFloat) * ups[2]).sum()).backward();

  at::Tensor qkvr = qkv0.clone().requires_grad_();
  const at::Tensor parts = qkvr.view({b, s, 3 * h, d});
  const at::Tensor qr = rotary_reference(parts.narrow(2, 0, h), cos, sin).transpose(1, 2);
  const at::Tensor kr = rotary_reference(parts.narrow(2, h, h), cos, sin).transpose(1, 2);
  const at::Tensor vr = parts.narrow(2, 2 * h, h).transpose(1, 2);
  ((qr.to(at::kFloat) * ups[0]).sum() + (kr.to(at::kFloat) * ups[1]).sum() + (vr.to(at::kFloat) * ups[2]).sum())
      .backward();
  expect_close(q, qr.contiguous(), t, "q");
  expect_close(k, kr.contiguous(), t, "k");
  EXPECT_TRUE(at::equal(v, vr.contiguous())) << "v is copied as it is";
  expect_close(qkv.grad(), qkvr.grad(), t, "qkv's gradient");

  // An output left unused gets no gradient; without tables, a plain split.
  at::Tensor qkv2 = qkv0.clone().requires_grad_();
  mlh::rt::split_heads_rotary(qkv2, h, cos, sin)[0].to(at::kFloat).sum().backward();
  EXPECT_TRUE(at::equal(qkv2.grad().view({b, s, 3 * h, d}).narrow(2, h, 2 * h), at::zeros({b, s, 2 * h, d}).to(t)));
  const auto plain = mlh::rt::split_heads_rotary(qkv0, h, at::Tensor(), at::Tensor());
  EXPECT_TRUE(at::equal(plain[0], parts.narrow(2, 0, h).transpose(1, 2).detach().contiguous()));
  at::Tensor qkv3 = qkv0.clone().requires_grad_();  // and its gradient: the split's, unrotated
  mlh::rt::split_heads_rotary(qkv3, h, at::Tensor(), at::Tensor())[1].to(at::kFloat).sum().backward();
  EXPECT_TRUE(at::equal(qkv3.grad().view({b, s, 3 * h, d}).narrow(2, h, h), at::ones({b, s, h, d}).to(t)));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, FusedOps, ::testing::Values(at::kFloat, at::kBFloat16),
                         [](const auto& info) { return info.param == at::kFloat ? "Float32" : "BFloat16"; });

TEST(FusedOpsRules, AResidualOfAnotherDtypeIsPromotedAndOtherTensorsTakeAtensOps) {
  at::manual_seed(6);
  const at::Tensor x = at::randn({4, 64}), r = at::randn({4, 64}).to(at::kBFloat16);
  const at::Tensor y = mlh::rt::add_rms_norm(x, r, 1e-6);
  EXPECT_EQ(y.scalar_type(), at::kFloat);
  EXPECT_TRUE(at::allclose(y, rms_norm_reference(x + r.to(at::kFloat), 1e-6), 1e-5, 1e-6));
  // Not contiguous: copied, same result. Double: ATen's ops.
  const at::Tensor wide = at::randn({64, 4});
  EXPECT_TRUE(at::allclose(mlh::rt::add_rms_norm(wide.t(), at::Tensor(), 1e-6), rms_norm_reference(wide.t(), 1e-6),
                           1e-5, 1e-6));
  EXPECT_FALSE(mlh::rt::fused_ops_apply(x.to(at::kDouble)));
  const at::Tensor xd = x.to(at::kDouble);
  EXPECT_TRUE(at::allclose(mlh::rt::add_rms_norm(xd, at::Tensor(), 1e-6), rms_norm_reference(xd, 1e-6)));
}

TEST(FusedOpsRules, ResultsDoNotDependOnTheThreadCount) {
  at::manual_seed(7);
  const at::Tensor x = at::randn({64, 81, 128}), r = at::randn({64, 81, 128}), gu = at::randn({64, 81, 512});
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const at::Tensor one = mlh::rt::add_rms_norm(x, r, 1e-5), one_silu = mlh::rt::silu_mul(gu);
  at::set_num_threads(std::max(threads, 2));
  const at::Tensor two = mlh::rt::add_rms_norm(x, r, 1e-5), two_silu = mlh::rt::silu_mul(gu);
  at::set_num_threads(threads);
  EXPECT_TRUE(at::equal(one, two));
  EXPECT_TRUE(at::equal(one_silu, two_silu));
}

// SiluMul computes in each thread with subnormals flushed (vectorized, its loop evaluates
// sigmoid's saturated side in every lane, and each subnormal there cost Intel a microcode assist),
// so a result below float's smallest normal is zero; the caller's floating-point mode is untouched.
TEST(FusedOpsRules, SiluMulFlushesSubnormalResultsAndLeavesTheCallersModeAsFound) {
#if defined(__x86_64__)
  const at::Tensor gate_up = at::tensor({-1.f, 2e-38f}).requires_grad_();  // silu(-1) * 2e-38 = -5.4e-39
  const at::Tensor aten = at::silu(gate_up.detach().narrow(0, 0, 1)) * gate_up.detach().narrow(0, 1, 1);
  ASSERT_NE(aten.item<float>(), 0.f) << "ATen keeps the subnormal, which this test relies on";
  const unsigned mode = _mm_getcsr();  // read after ATen's underflow has set the status flags
  const at::Tensor y = mlh::rt::silu_mul(gate_up);
  EXPECT_EQ(y.item<float>(), 0.f);
  y.sum().backward();  // d up = silu(-1), a normal number: unchanged
  EXPECT_NEAR(gate_up.grad()[1].item<float>(), at::silu(at::tensor(-1.f)).item<float>(), 1e-6);
  EXPECT_EQ(_mm_getcsr(), mode);
#else
  GTEST_SKIP() << "flushing subnormals is x86's concern";
#endif
}

}  // namespace
