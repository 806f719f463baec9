// AdamATan2, ported to C++ and modified from imoneoi/adam-atan2 (Apache-2.0; THIRD-PARTY.md):
// the optimizer the TRM reference trains its dense weights with (pretrain.py,
// `from adam_atan2 import AdamATan2`, PyPI adam-atan2 = github imoneoi/adam-atan2 at
// 42a1aeb, csrc/adam_atan2.cu). Adam with atan2 in place of the division by sqrt(v) + eps
// (Everett et al. 2024, arXiv 2407.05872): no eps, and every element moves by at most
// lr * a * pi/2 / (1 - beta1^t). Per step t (1-based) and element, in the parameter's dtype
// (float for half/bf16, as the kernel's opmath):
//   p   <- p * (1 - lr * weight_decay)                     decoupled decay, as AdamW's
//   m   <- lerp(m, g, 1 - beta1)
//   v   <- lerp(v, g*g, 1 - beta2)
//   p   <- p - a * lr / (1 - beta1^t) * atan2(m, b * sqrt(v) / sqrt(1 - beta2^t))
// The first moment's bias correction scales the step outside atan2 (the kernel at 42a1aeb;
// 0670b3d moved it inside and was reverted). At t = 1 this moves p by
// a * lr * atan(0.1 / b) / 0.1 * sign(g) for beta1 = 0.9 (~0.9967 lr for a = b = 1), and not
// at all where g = 0 (atan2(0, 0) = 0).
// a and b are the paper's scales; the package has none, i.e. a = b = 1, so those are the
// defaults here (lucidrains' adam-atan2-pytorch, another package, defaults to a = 1.27).
//
// save()/load() keep the state by position (group, parameter index), not by the parameter's
// address that LibTorch's own optimizers key by (a string in 1.13, a void* in 2.x, see
// mlh/runtime/compat.hpp): the same archive reads back under either version.
#pragma once

#include <tuple>
#include <vector>

#include <torch/optim/optimizer.h>

namespace trm {

struct AdamATan2Options : public torch::optim::OptimizerCloneableOptions<AdamATan2Options> {
  AdamATan2Options(double lr = 1e-3) : lr_(lr) {}  // NOLINT(google-explicit-constructor): as AdamWOptions
  TORCH_ARG(double, lr) = 1e-3;
  typedef std::tuple<double, double> betas_t;
  TORCH_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);
  TORCH_ARG(double, weight_decay) = 1e-2;
  TORCH_ARG(double, a) = 1.0;
  TORCH_ARG(double, b) = 1.0;

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
};

struct AdamATan2ParamState : public torch::optim::OptimizerCloneableParamState<AdamATan2ParamState> {
  TORCH_ARG(int64_t, step) = 0;
  TORCH_ARG(at::Tensor, exp_avg);
  TORCH_ARG(at::Tensor, exp_avg_sq);

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
};

class AdamATan2 : public torch::optim::Optimizer {
 public:
  // Throws c10::Error on a negative lr or weight_decay, betas outside [0, 1), a or b <= 0.
  explicit AdamATan2(std::vector<at::Tensor> params, AdamATan2Options defaults = {});

  // Parameters without a gradient are skipped (their step count does not advance), as the
  // reference's; sparse gradients are refused.
  at::Tensor step(LossClosure closure = nullptr) override;
  // Options of every group and each parameter's state; load() checks the groups and the
  // shapes fit (c10::Error otherwise) and puts the moments on their parameter's device.
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;
};

}  // namespace trm
