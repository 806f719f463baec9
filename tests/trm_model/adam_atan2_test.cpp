// AdamATan2 (model/adam_atan2.hpp) against the update rule of the package the TRM reference
// trains with (imoneoi/adam-atan2 at 42a1aeb): each test checks parameters against that rule
// computed here in double precision, so plain Adam(W) (m / (sqrt(v) + eps), or the bias
// correction inside atan2) fails every one of them.
#include <cmath>
#include <sstream>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <mlh/runtime/checkpoint.hpp>
#include <torch/cuda.h>
#include <torch/optim/adamw.h>

#include "model/adam_atan2.hpp"

namespace {

// The rule, element by element in double (the package's _adam_atan2_reference_impl with a
// and b, the paper's scales, which the package fixes at 1).
struct Reference {
  std::vector<double> p, m, v;
  int64_t t = 0;
  double beta1 = 0.9, beta2 = 0.95, a = 1, b = 1;

  explicit Reference(std::vector<double> p0) : p(std::move(p0)), m(p.size()), v(p.size()) {}
  void step(const std::vector<double>& g, double lr, double wd) {
    ++t;
    const double step_size = lr / (1 - std::pow(beta1, t)), bc2_sqrt = std::sqrt(1 - std::pow(beta2, t));
    for (size_t i = 0; i < p.size(); ++i) {
      p[i] *= 1 - lr * wd;
      m[i] = beta1 * m[i] + (1 - beta1) * g[i];
      v[i] = beta2 * v[i] + (1 - beta2) * g[i] * g[i];
      p[i] -= a * step_size * std::atan2(m[i], b * std::sqrt(v[i]) / bc2_sqrt);
    }
  }
};

std::vector<double> values(const at::Tensor& t) {
  const at::Tensor d = t.detach().to(at::kCPU, at::kDouble).contiguous();
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

at::Tensor tensor(const std::vector<double>& v, c10::Device device = at::kCPU) {
  return at::tensor(v, at::dtype(at::kDouble)).to(device, at::kFloat);
}

double max_diff(const at::Tensor& t, const std::vector<double>& expected) {
  double d = 0;
  const std::vector<double> got = values(t);
  for (size_t i = 0; i < got.size(); ++i) d = std::max(d, std::abs(got[i] - expected[i]));
  return d;
}

const std::vector<std::vector<double>> kGrads = {{0.3, -2.0, 0.0, 1e-3}, {-0.1, 1.0, 0.5, 1e-3}, {0.2, -0.5, -0.5, -4.0}};

void three_steps_match_the_reference(c10::Device device) {
  const double lr = 0.1, wd = 0.2;
  at::Tensor p = tensor({0.5, -1.0, 2.0, 0.0}, device).requires_grad_();
  trm::AdamATan2 opt({p}, trm::AdamATan2Options(lr).betas({0.9, 0.95}).weight_decay(wd));
  Reference ref(values(p));
  for (const auto& g : kGrads) {
    p.mutable_grad() = tensor(g, device);
    opt.step();
    ref.step(g, lr, wd);
    EXPECT_LT(max_diff(p, ref.p), 2e-7) << "step " << ref.t;
  }
  // The package's reference formula run in float64 by PyTorch 2.x (its test's
  // _adam_atan2_reference_impl; the package's kernel itself needs CUDA to build).
  const std::vector<double> python = {0.27502552700068816, -0.78462608082672147, 1.8152834625186569,
                                      -0.13085364948312686};
  EXPECT_LT(max_diff(p, python), 2e-7);
  for (size_t i = 0; i < python.size(); ++i) EXPECT_NEAR(ref.p[i], python[i], 1e-15) << i;
  auto& st = static_cast<trm::AdamATan2ParamState&>(*opt.state().begin()->second);
  EXPECT_EQ(st.step(), 3);
  EXPECT_LT(max_diff(st.exp_avg(), ref.m), 1e-7);
  EXPECT_LT(max_diff(st.exp_avg_sq(), ref.v), 1e-7);
}

TEST(TrmAdamATan2, StepsMatchTheReferenceRule) {
  three_steps_match_the_reference(at::kCPU);

  // Step 1 in closed form: m / sqrt(v) debiased is sign(g), but the bias correction of m
  // scales the step outside atan2: lr / 0.1 * atan(0.1) whatever |g| (1e-3 or 0.3), not
  // lr (Adam) nor lr * pi/4 (correction inside atan2); g = 0 only decays.
  at::Tensor p = at::zeros({3}).requires_grad_();
  trm::AdamATan2 opt({p}, trm::AdamATan2Options(0.1).betas({0.9, 0.95}).weight_decay(0));
  p.mutable_grad() = at::tensor({1e-3f, -0.3f, 0.0f});
  opt.step();
  const double first = 0.1 / 0.1 * std::atan(0.1);  // 0.09966865...
  EXPECT_LT(max_diff(p, {-first, first, 0.0}), 1e-8);
  EXPECT_GT(std::abs(first - 0.1), 3e-4);

  // Plain AdamW on the same steps ends far from the rule (the tolerance above tells them apart).
  at::Tensor q = tensor({0.5, -1.0, 2.0, 0.0}).requires_grad_();
  torch::optim::AdamW adamw({q}, torch::optim::AdamWOptions(0.1).betas({0.9, 0.95}).weight_decay(0.2));
  for (const auto& g : kGrads) {
    q.mutable_grad() = tensor(g);
    adamw.step();
  }
  EXPECT_GT(max_diff(q, {0.27502552700068816, -0.78462608082672147, 1.8152834625186569, -0.13085364948312686}),
            1e-4);

  // bf16 parameters: the math in float, parameter and moments stored back in bf16.
  at::Tensor h = tensor({0.5, -1.0, 2.0, 0.0}).to(at::kBFloat16).requires_grad_();
  trm::AdamATan2 half_opt({h}, trm::AdamATan2Options(0.1).betas({0.9, 0.95}).weight_decay(0.2));
  Reference ref(values(h));
  h.mutable_grad() = tensor(kGrads[0]).to(at::kBFloat16);
  half_opt.step();
  ref.step(values(h.grad()), 0.1, 0.2);
  EXPECT_EQ(h.scalar_type(), at::kBFloat16);
  EXPECT_TRUE(at::equal(h, tensor(ref.p).to(at::kBFloat16)));
}

TEST(TrmAdamATan2, StepsMatchTheReferenceRuleOnCuda) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  three_steps_match_the_reference(at::Device(at::kCUDA, 0));
}

// lr is the group's at the step (the trainer sets the scheduled one on param_groups()) and
// scales both the decay (1 - lr * weight_decay) and the step; a and b are the paper's scales.
TEST(TrmAdamATan2, LrAndWeightDecayEnterAsTheReference) {
  at::Tensor p = tensor({0.5, -1.0, 2.0, 0.0}).requires_grad_();
  trm::AdamATan2 opt({p}, trm::AdamATan2Options(123.0).betas({0.9, 0.95}).weight_decay(0.5));
  Reference ref(values(p));
  const double lrs[] = {0.02, 0.3, 0.07};
  for (int s = 0; s < 3; ++s) {
    for (auto& group : opt.param_groups()) group.options().set_lr(lrs[s]);
    EXPECT_EQ(opt.param_groups()[0].options().get_lr(), lrs[s]);
    p.mutable_grad() = tensor(kGrads[s]);
    opt.step();
    ref.step(kGrads[s], lrs[s], 0.5);
    EXPECT_LT(max_diff(p, ref.p), 2e-7) << "step " << s + 1;
  }

  // No gradient anywhere: only the decoupled decay, p (1 - lr wd), moments stay 0.
  at::Tensor z = tensor({0.5, -1.0, 2.0}).requires_grad_();
  trm::AdamATan2 decay({z}, trm::AdamATan2Options(0.1).weight_decay(0.5));
  z.mutable_grad() = at::zeros({3});
  decay.step();
  EXPECT_LT(max_diff(z, {0.475, -0.95, 1.9}), 1e-7);

  // a scales the step, b the denominator inside atan2.
  at::Tensor w = tensor({0.5, -1.0, 2.0, 0.0}).requires_grad_();
  trm::AdamATan2 scaled({w}, trm::AdamATan2Options(0.1).betas({0.9, 0.95}).weight_decay(0.2).a(1.27).b(0.5));
  Reference sref(values(w));
  sref.a = 1.27;
  sref.b = 0.5;
  for (const auto& g : kGrads) {
    w.mutable_grad() = tensor(g);
    scaled.step();
    sref.step(g, 0.1, 0.2);
  }
  EXPECT_LT(max_diff(w, sref.p), 3e-7);
  EXPECT_THROW(trm::AdamATan2({w}, trm::AdamATan2Options(-1.0)), c10::Error);
  EXPECT_THROW(trm::AdamATan2({w}, trm::AdamATan2Options(0.1).betas({1.0, 0.9})), c10::Error);
}

// Through the checkpoint's TrainingState, as the trainer saves it: a run saved after 3 steps
// and loaded into a fresh optimizer (other options, another lr) continues bit for bit.
TEST(TrmAdamATan2, SavedStateContinuesBitIdentically) {
  at::manual_seed(4);
  auto make_params = [] {
    at::manual_seed(4);
    return std::vector<at::Tensor>{at::randn({3, 5}).requires_grad_(), at::randn({7}).requires_grad_(),
                                   at::randn({2}).requires_grad_()};  // the last never gets a gradient
  };
  std::vector<at::Tensor> grads;
  for (int s = 0; s < 6; ++s) grads.push_back(at::randn({3, 5})), grads.push_back(at::randn({7}));
  auto run = [&](std::vector<at::Tensor>& ps, trm::AdamATan2& opt, int from, int to) {
    for (int s = from; s < to; ++s) {
      for (auto& group : opt.param_groups()) group.options().set_lr(0.01 * (s + 1));
      ps[0].mutable_grad() = grads[2 * s].clone();
      ps[1].mutable_grad() = grads[2 * s + 1].clone();
      opt.step();
    }
  };
  const trm::AdamATan2Options options = trm::AdamATan2Options(1e-2).betas({0.9, 0.95}).weight_decay(0.1);
  std::vector<at::Tensor> a = make_params();
  Reference ref(values(a[1]));
  trm::AdamATan2 opt_a(a, options);
  run(a, opt_a, 0, 3);
  std::stringstream stream;
  mlh::rt::TrainingState saved;
  saved.add("optimizer", opt_a);
  mlh::rt::save_training_state(saved, stream);

  std::vector<at::Tensor> b = make_params(), c = make_params();
  {
    at::NoGradGuard no_grad;
    for (size_t i = 0; i < a.size(); ++i) b[i].copy_(a[i]), c[i].copy_(a[i]);
  }
  trm::AdamATan2 opt_b(b, trm::AdamATan2Options(5.0).weight_decay(0.7));
  mlh::rt::TrainingState target;
  target.add("optimizer", opt_b);
  mlh::rt::load_training_state(target, stream, at::Device(at::kCPU));
  EXPECT_EQ(opt_b.param_groups()[0].options().get_lr(), opt_a.param_groups()[0].options().get_lr());
  EXPECT_EQ(opt_b.state().size(), 2u);
  trm::AdamATan2 opt_c(c, options);  // the same values without the moments

  run(a, opt_a, 3, 6);
  run(b, opt_b, 3, 6);
  run(c, opt_c, 3, 6);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(at::equal(a[i], b[i])) << i;
  EXPECT_FALSE(at::equal(a[0], c[0]));  // the restored moments and step count mattered
  for (int s = 0; s < 6; ++s) ref.step(values(grads[2 * s + 1]), 0.01 * (s + 1), 0.1);
  EXPECT_LT(max_diff(b[1], ref.p), 1e-6);

  // Another optimizer's state does not load into it.
  std::stringstream adamw_stream;
  torch::optim::AdamW adamw(make_params());
  mlh::rt::TrainingState adamw_state;
  adamw_state.add("optimizer", adamw);
  mlh::rt::save_training_state(adamw_state, adamw_stream);
  EXPECT_ANY_THROW(mlh::rt::load_training_state(target, adamw_stream, at::Device(at::kCPU)));
}

// Least squares y = X w*: the loss falls by orders of magnitude, along the reference rule.
TEST(TrmAdamATan2, TinyRegressionLossDecreases) {
  at::manual_seed(7);
  const at::Tensor x = at::randn({64, 4}), w_true = at::tensor({1.5f, -2.0f, 0.5f, 3.0f});
  const at::Tensor y = at::matmul(x, w_true);
  at::Tensor w = at::zeros({4}).requires_grad_();
  trm::AdamATan2 opt({w}, trm::AdamATan2Options(0.05).betas({0.9, 0.95}).weight_decay(0.0));
  Reference ref(values(w));
  double first = 0, last = 0;
  for (int s = 0; s < 300; ++s) {
    opt.zero_grad();
    const at::Tensor loss = (at::matmul(x, w) - y).pow(2).mean();
    loss.backward();
    if (s == 0) first = loss.item<double>();
    last = loss.item<double>();
    if (s < 20) ref.step(values(w.grad()), 0.05, 0.0);  // the rule while the path is well-conditioned
    opt.step();
    if (s == 19) {
      EXPECT_LT(max_diff(w, ref.p), 1e-5);
    }
  }
  EXPECT_LT(last, 1e-3 * first) << "first " << first << " last " << last;
}

}  // namespace
