// mlh::rt::linear against the same product in double: the output and both gradients at TRM's
// shapes and at sizes off the kernel's 8 x 32 block and its 512-deep packing, three-dimensional
// inputs, the no-grad path, results that do not depend on the thread count; what it leaves to
// at::linear (double, bfloat16, CPU autocast, a mismatched weight) and that the fallback gives
// at::linear's result.
#include <algorithm>
#include <cmath>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <mlh/runtime/compat.hpp>
#include <mlh/runtime/cpu_linear.hpp>
#include <torch/autograd.h>

namespace {

// |got - want| against the largest |want|: a float32 sum over the depth rounds each term once,
// so the error grows with the depth's square root; 1e-6 per unit of it leaves a wide margin.
void expect_close(const at::Tensor& got, const at::Tensor& want, int64_t depth, const char* what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  EXPECT_EQ(got.scalar_type(), at::kFloat) << what;
  const double err = (got.to(at::kDouble) - want).abs().max().item<double>();
  const double scale = std::max(1.0, want.abs().max().item<double>());
  EXPECT_LE(err, 1e-6 * std::sqrt(static_cast<double>(depth)) * scale)
      << what << ": max difference " << err << " against " << scale;
}

// y = x w^T and both gradients, float32 through mlh::rt::linear against double through ATen.
void check_against_double(const std::vector<int64_t>& x_shape, int64_t out) {
  SCOPED_TRACE(testing::Message() << "x " << at::IntArrayRef(x_shape) << ", " << out << " outputs");
  const int64_t in = x_shape.back();
  int64_t rows = 1;  // the weight's gradient sums over these
  for (size_t i = 0; i + 1 < x_shape.size(); ++i) rows *= x_shape[i];
  at::manual_seed(static_cast<uint64_t>(in * 1000 + out));
  const at::Tensor x0 = at::randn(x_shape), w0 = at::randn({out, in}) / std::sqrt(static_cast<double>(in));
  std::vector<int64_t> y_shape = x_shape;
  y_shape.back() = out;
  const at::Tensor up = at::randn(y_shape);
  at::Tensor x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_();
  const at::Tensor y = mlh::rt::linear(x, w);
  (y * up).sum().backward();
  at::Tensor xd = x0.to(at::kDouble).requires_grad_(), wd = w0.to(at::kDouble).requires_grad_();
  const at::Tensor yd = at::linear(xd, wd);
  (yd * up.to(at::kDouble)).sum().backward();
  expect_close(y, yd.detach(), in, "output");
  expect_close(x.grad(), xd.grad(), out, "x's gradient");
  expect_close(w.grad(), wd.grad(), rows, "the weight's gradient");
  at::NoGradGuard no_grad;
  EXPECT_TRUE(at::equal(mlh::rt::linear(x0, w0), y.detach())) << "the no-grad path";
}

TEST(CpuLinear, MatchesDoubleAtTrmShapes) {
  // TRM small's layers: 32 puzzles of 81 positions, hidden 128, SwiGLU's 512, q/k/v's 384.
  check_against_double({32, 81, 128}, 384);
  check_against_double({32, 81, 128}, 1024);
  check_against_double({32, 81, 512}, 128);
}

TEST(CpuLinear, MatchesDoubleOffTheBlockSizes) {
  check_against_double({13, 7}, 45);     // rows past the last 8-row block, a 13-column last panel
  check_against_double({1, 1}, 1);       // one of everything
  check_against_double({3, 5, 33}, 31);  // three dimensions; fewer than one panel of columns
  check_against_double({9, 1100}, 70);   // a depth over 512: the packed blocks add up
  check_against_double({600, 20}, 16);   // the weight's gradient 600 deep, over 512
  check_against_double({10, 20}, 2100);  // over 2048 outputs: packed 2048 columns at a time
}

TEST(CpuLinear, EmptyDimensionsGiveEmptyOrZeroResults) {
  at::Tensor x = at::randn({0, 4}).requires_grad_(), w = at::randn({3, 4}).requires_grad_();
  const at::Tensor y = mlh::rt::linear(x, w);
  EXPECT_EQ(y.sizes(), at::IntArrayRef({0, 3}));
  y.sum().backward();
  EXPECT_TRUE(at::equal(w.grad(), at::zeros({3, 4}))) << "no rows: the weight's gradient is zero";
  const at::Tensor no_depth = mlh::rt::linear(at::randn({5, 0}), at::randn({2, 0}));
  EXPECT_TRUE(at::equal(no_depth, at::zeros({5, 2}))) << "an empty sum is zero";
}

// The weight's gradient sums parts of the batch's rows (four at 2592 rows, two at 1000) that
// two or four threads take whole and three split; the sum must not change with any of them.
void expect_same_for_any_thread_count(int64_t rows, int64_t in, int64_t out) {
  SCOPED_TRACE(testing::Message() << rows << " rows, " << in << " inputs, " << out << " outputs");
  const at::Tensor x0 = at::randn({rows, in}), w0 = at::randn({out, in}), up = at::randn({rows, out});
  const int threads_before = at::get_num_threads();
  auto run = [&](int threads) {
    at::set_num_threads(threads);
    at::Tensor x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_();
    const at::Tensor y = mlh::rt::linear(x, w);
    (y * up).sum().backward();
    return std::vector<at::Tensor>{y.detach(), x.grad(), w.grad()};
  };
  const auto one = run(1);
  for (int threads : {2, 3, 4}) {
    const auto many = run(threads);
    EXPECT_TRUE(at::equal(one[0], many[0])) << "output, " << threads << " threads";
    EXPECT_TRUE(at::equal(one[1], many[1])) << "x's gradient, " << threads << " threads";
    EXPECT_TRUE(at::equal(one[2], many[2])) << "the weight's gradient, " << threads << " threads";
  }
  at::set_num_threads(threads_before);
}

TEST(CpuLinear, ResultsDoNotDependOnTheThreadCount) {
  if (!mlh::rt::cpu_linear_applies(at::randn({1, 1}), at::randn({1, 1})))
    GTEST_SKIP() << "this CPU has no AVX-512F: linear() is at::linear here";
  expect_same_for_any_thread_count(2592, 128, 384);
  expect_same_for_any_thread_count(1000, 33, 45);
}

TEST(CpuLinear, LeavesOtherInputsToAtLinear) {
  const at::Tensor x = at::randn({6, 8}), w = at::randn({5, 8});
  EXPECT_FALSE(mlh::rt::cpu_linear_applies(x.to(at::kDouble), w.to(at::kDouble)));
  EXPECT_FALSE(mlh::rt::cpu_linear_applies(x.to(at::kBFloat16), w.to(at::kBFloat16)));
  EXPECT_FALSE(mlh::rt::cpu_linear_applies(x, at::randn({5, 7}))) << "the weight's inputs do not match x's";
  EXPECT_FALSE(mlh::rt::cpu_linear_applies(x, at::randn({5, 8, 1}))) << "a weight of three dimensions";
  EXPECT_TRUE(at::equal(mlh::rt::linear(x.to(at::kDouble), w.to(at::kDouble)),
                        at::linear(x.to(at::kDouble), w.to(at::kDouble))));
  {
    // Under CPU autocast at::linear computes in bf16; linear() must keep that.
    mlh::rt::compat::set_autocast_enabled(at::kCPU, true);
    const bool applies = mlh::rt::cpu_linear_applies(x, w);
    const at::Tensor y = mlh::rt::linear(x, w), want = at::linear(x, w);
    mlh::rt::compat::set_autocast_enabled(at::kCPU, false);
    EXPECT_FALSE(applies);
    EXPECT_EQ(y.scalar_type(), want.scalar_type());
    EXPECT_TRUE(at::equal(y, want));
  }
}

}  // namespace
