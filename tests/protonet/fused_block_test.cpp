// The fused batch norm -> ReLU -> 2x2 max pool (fused_block.hpp) against ATen's three ops:
// outputs, gradients of the input, weight and bias, and the running statistics, on shapes
// with odd sizes (rows the pooling leaves out), ties, channels that ReLU cuts, and a large
// mean; and Conv-4 with and without it.
#include <algorithm>
#include <limits>
#include <string>
#include <tuple>

#include <gtest/gtest.h>
#include <mlh/runtime/apply_plan.hpp>
#include <torch/autograd.h>

#include "fused_block.hpp"
#include "model.hpp"

namespace {

struct Result {
  at::Tensor out, dx, dweight, dbias, running_mean, running_var;
};

Result run(const at::Tensor& input, const at::Tensor& weight0, const at::Tensor& bias0, const at::Tensor& upstream,
           double momentum, bool fused) {
  const int64_t c = input.size(1);
  at::Tensor x = input.clone().requires_grad_(true);
  at::Tensor weight = weight0.clone().requires_grad_(true), bias = bias0.clone().requires_grad_(true);
  // The running statistics in the weight's dtype, as BatchNorm2d keeps them (fp32 under bf16 autocast).
  at::Tensor running_mean = at::full({c}, 0.5, weight0.options()), running_var = at::full({c}, 2.0, weight0.options());
  at::Tensor out = fused ? protonet::batch_norm_relu_pool(x, weight, bias, running_mean, running_var, momentum, 1e-5)
                         : at::max_pool2d(at::relu(at::batch_norm(x, weight, bias, running_mean, running_var, true,
                                                                  momentum, 1e-5, false)),
                                          {2, 2});
  const auto grads = torch::autograd::grad({out}, {x, weight, bias}, {upstream});
  return {out.detach(), grads[0], grads[1], grads[2], running_mean, running_var};
}

void expect_close(const at::Tensor& fused, const at::Tensor& aten, const char* what, double rtol = 1e-4,
                  double atol = 1e-5) {
  ASSERT_EQ(fused.sizes(), aten.sizes()) << what;
  EXPECT_TRUE(at::allclose(fused, aten, rtol, atol))
      << what << ": largest difference " << (fused - aten).abs().max().item<double>();
}

// Both layouts the fused op takes: NCHW (its NCHW kernels) and channels-last (its NHWC ones),
// each with its output in the input's layout.
const at::MemoryFormat kLayouts[] = {at::MemoryFormat::Contiguous, at::MemoryFormat::ChannelsLast};

void expect_matches_aten(const at::Tensor& input, double momentum = 0.1) {
  const int64_t c = input.size(1);
  const at::Tensor weight = at::randn({c}), bias = at::randn({c});  // negative weights flip the maxima
  const at::Tensor upstream = at::randn({input.size(0), c, input.size(2) / 2, input.size(3) / 2});
  for (const at::MemoryFormat layout : kLayouts) {
    SCOPED_TRACE(testing::Message() << "shape " << input.sizes() << ", momentum " << momentum << ", layout " << layout);
    const at::Tensor x = input.contiguous(layout);
    ASSERT_TRUE(protonet::fused_block_applies(x));
    const Result fused = run(x, weight, bias, upstream.contiguous(layout), momentum, true);
    const Result aten = run(x, weight, bias, upstream, momentum, false);
    EXPECT_TRUE(fused.out.is_contiguous(layout));
    EXPECT_TRUE(fused.dx.is_contiguous(layout));
    expect_close(fused.out, aten.out, "output");
    expect_close(fused.dx, aten.dx, "input gradient");
    expect_close(fused.dweight, aten.dweight, "weight gradient");
    expect_close(fused.dbias, aten.dbias, "bias gradient");
    expect_close(fused.running_mean, aten.running_mean, "running mean", 1e-5, 1e-6);
    expect_close(fused.running_var, aten.running_var, "running variance", 1e-5, 1e-6);
  }
}

TEST(FusedBlock, MatchesBatchNormReluMaxPool) {
  at::manual_seed(11);
  expect_matches_aten(at::randn({6, 8, 28, 28}));
  expect_matches_aten(at::randn({5, 8, 7, 7}));        // odd: the last row and column are not pooled
  expect_matches_aten(at::randn({4, 3, 3, 3}));        // Conv-4's last block on 28x28 inputs
  expect_matches_aten(at::randn({2, 4, 2, 5}));        // a window's worth of rows
  expect_matches_aten(at::randn({3, 4, 8, 8}), 0.0);   // momentum 0: running statistics kept
}

// A mean far above the spread: x_hat loses digits in fp32 whichever way it is computed, so
// both are held to the ops computed in double, and the fused op may be no further from them.
TEST(FusedBlock, AMeanFarAboveTheSpreadStaysAsAccurateAsATen) {
  at::manual_seed(15);
  const at::Tensor x = at::randn({3, 4, 6, 6}) * 0.01 + 300.0;
  const at::Tensor weight = at::randn({4}), bias = at::randn({4}), upstream = at::randn({3, 4, 3, 3});
  const Result aten = run(x, weight, bias, upstream, 0.1, false);
  const Result exact = run(x.to(at::kDouble), weight.to(at::kDouble), bias.to(at::kDouble), upstream.to(at::kDouble),
                           0.1, false);
  auto error = [](const at::Tensor& t, const at::Tensor& reference) {
    return (t.to(at::kDouble) - reference).abs().max().item<double>();
  };
  for (const at::MemoryFormat layout : kLayouts) {
    SCOPED_TRACE(testing::Message() << "layout " << layout);
    const Result fused = run(x.contiguous(layout), weight, bias, upstream, 0.1, true);
    for (auto [name, f, a, e] : {std::make_tuple("output", fused.out, aten.out, exact.out),
                                 std::make_tuple("input gradient", fused.dx, aten.dx, exact.dx),
                                 std::make_tuple("weight gradient", fused.dweight, aten.dweight, exact.dweight)}) {
      const double fused_error = error(f, e), aten_error = error(a, e);
      EXPECT_LE(fused_error, std::max(1.5 * aten_error, 1e-4))
          << name << ": fused " << fused_error << ", ATen " << aten_error;
    }
  }
}

TEST(FusedBlock, TiesGoToTheFirstInTheWindowAsInATen) {
  at::manual_seed(12);
  // Values from {0, 1, 2}: most windows hold equal maxima.
  expect_matches_aten(at::randint(0, 3, {4, 5, 10, 10}).to(at::kFloat));
}

TEST(FusedBlock, MomentumZeroLeavesTheRunningStatistics) {
  at::manual_seed(13);
  const at::Tensor x = at::randn({2, 3, 4, 4});
  const Result r = run(x, at::ones({3}), at::zeros({3}), at::ones({2, 3, 2, 2}), 0.0, true);
  EXPECT_TRUE(at::equal(r.running_mean, at::full({3}, 0.5)));
  EXPECT_TRUE(at::equal(r.running_var, at::full({3}, 2.0)));
}

// A diverged activation must reach the loss as NaN (so the run's non-finite check sees it),
// not be cut to 0 by the ReLU; other channels are untouched, as with ATen's ops.
TEST(FusedBlock, ANanInAChannelMakesThatChannelNan) {
  at::manual_seed(16);
  at::Tensor x = at::randn({2, 3, 4, 4});
  x[1][2][3][0] = std::numeric_limits<float>::quiet_NaN();
  const at::Tensor aten = run(x, at::ones({3}), at::zeros({3}), at::ones({2, 3, 2, 2}), 0.1, false).out;
  EXPECT_TRUE(aten.select(1, 2).isnan().all().item<bool>()) << aten;
  for (const at::MemoryFormat layout : kLayouts) {
    SCOPED_TRACE(testing::Message() << "layout " << layout);
    const at::Tensor out =
        run(x.contiguous(layout), at::ones({3}), at::zeros({3}), at::ones({2, 3, 2, 2}), 0.1, true).out;
    EXPECT_TRUE(out.select(1, 2).isnan().all().item<bool>()) << out;
    expect_close(out.narrow(1, 0, 2), aten.narrow(1, 0, 2), "the other channels");
  }
}

// In bf16 (the conv's output under CPU autocast; weights, biases and running statistics in
// fp32): ATen's three ops compute in float and round to bf16 between them, so both sides are
// held to bf16's precision, by relative error over the whole tensor (where two inputs of a
// window round to nearly the same bf16 value, either may win and take the gradient).
TEST(FusedBlock, MatchesBatchNormReluMaxPoolInBf16) {
  at::manual_seed(17);
  const at::Tensor x = at::randn({6, 8, 14, 14}).to(at::kBFloat16);
  const at::Tensor weight = at::randn({8}), bias = at::randn({8});
  const at::Tensor upstream = at::randn({6, 8, 7, 7}).to(at::kBFloat16);
  const Result aten = run(x, weight, bias, upstream, 0.1, false);
  auto relative = [](const at::Tensor& a, const at::Tensor& b) {
    return ((a.to(at::kDouble) - b.to(at::kDouble)).norm() / b.to(at::kDouble).norm()).item<double>();
  };
  for (const at::MemoryFormat layout : kLayouts) {
    SCOPED_TRACE(testing::Message() << "layout " << layout);
    ASSERT_TRUE(protonet::fused_block_applies(x.contiguous(layout)));
    const Result fused = run(x.contiguous(layout), weight, bias, upstream.contiguous(layout), 0.1, true);
    EXPECT_EQ(fused.out.scalar_type(), at::kBFloat16);
    EXPECT_EQ(fused.dx.scalar_type(), at::kBFloat16);
    EXPECT_EQ(fused.dweight.scalar_type(), at::kFloat);
    EXPECT_LT(relative(fused.out, aten.out), 1e-2);
    EXPECT_LT(relative(fused.dx, aten.dx), 2e-2);
    EXPECT_LT(relative(fused.dweight, aten.dweight), 2e-2);
    EXPECT_LT(relative(fused.dbias, aten.dbias), 2e-2);
    expect_close(fused.running_mean, aten.running_mean, "running mean", 1e-3, 1e-4);
    expect_close(fused.running_var, aten.running_var, "running variance", 1e-3, 1e-4);
  }
}

TEST(FusedBlock, AppliesOnlyToFp32AndBf16NchwOrNhwcCpuTensorsOfAWindowOrMore) {
  EXPECT_TRUE(protonet::fused_block_applies(at::zeros({2, 3, 4, 4})));
  EXPECT_TRUE(protonet::fused_block_applies(at::zeros({2, 3, 4, 4}).contiguous(at::MemoryFormat::ChannelsLast)));
  EXPECT_FALSE(protonet::fused_block_applies(at::zeros({2, 3, 4, 8}).narrow(3, 0, 4)));  // neither layout: strided
  EXPECT_TRUE(protonet::fused_block_applies(at::zeros({2, 3, 4, 4}, at::kBFloat16)));
  EXPECT_FALSE(protonet::fused_block_applies(at::zeros({2, 3, 4, 4}, at::kHalf)));
  EXPECT_FALSE(protonet::fused_block_applies(at::zeros({2, 3, 1, 4})));
  EXPECT_FALSE(protonet::fused_block_applies(at::zeros({3, 4, 4})));
  EXPECT_FALSE(protonet::fused_block_applies(at::Tensor()));
}

// A whole Conv-4 training step, fused and not, from the same weights: the same embeddings,
// gradients and running statistics; in NCHW, and in NHWC as the plan's channels_last runs it.
void expect_conv4_trains_the_same(bool channels_last) {
  at::manual_seed(14);
  protonet::Conv4 fused(1, 16), aten(1, 16);
  {
    torch::NoGradGuard no_grad;
    auto a = fused->named_parameters(), b = aten->named_parameters();
    for (auto& item : a) b[item.key()].copy_(item.value());
  }
  if (channels_last) {
    mlh::rt::to_channels_last(*fused);
    mlh::rt::to_channels_last(*aten);
  }
  aten->set_fused_cpu_block(false);
  fused->train();
  aten->train();
  const at::Tensor x =
      at::rand({10, 1, 28, 28}).contiguous(channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous);
  const at::Tensor ef = fused->forward(x), ea = aten->forward(x);
  expect_close(ef, ea, "embeddings");
  ef.pow(2).sum().backward();
  ea.pow(2).sum().backward();
  auto a = aten->named_parameters();
  // A convolution's bias feeds a batch norm, which subtracts it again: its true gradient is 0,
  // and what either path computes is rounding noise (how much depends on the instructions the
  // CPU runs), held to 5e-5 of the largest gradient instead (about 5e-6 seen).
  double largest = 0;
  for (auto& item : aten->named_parameters()) largest = std::max(largest, item.value().grad().abs().max().item<double>());
  for (auto& item : fused->named_parameters()) {
    const at::Tensor f = item.value().grad(), e = a[item.key()].grad();
    if (item.key().find("_conv.bias") != std::string::npos) {
      EXPECT_LT(f.abs().max().item<double>(), 5e-5 * largest) << item.key() << ", fused";
      EXPECT_LT(e.abs().max().item<double>(), 5e-5 * largest) << item.key() << ", ATen";
    } else {
      expect_close(f, e, item.key().c_str(), 1e-3, 1e-4);
    }
  }
  auto ab = aten->named_buffers();
  for (auto& item : fused->named_buffers())
    expect_close(item.value().to(at::kDouble), ab[item.key()].to(at::kDouble), item.key().c_str(), 1e-5, 1e-6);
}

TEST(FusedBlock, Conv4TrainsTheSameWithAndWithoutIt) { expect_conv4_trains_the_same(false); }
TEST(FusedBlock, Conv4TrainsTheSameWithAndWithoutItInChannelsLast) { expect_conv4_trains_the_same(true); }

}  // namespace
