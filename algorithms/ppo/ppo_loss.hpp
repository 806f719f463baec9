// The PPO loss of one sample, declared once for both update paths (CleanRL's ppo.py):
//   policy  max(-A r, -A clip(r, 1 - c, 1 + c))            r = exp(logp - old_logp)
//   value   0.5 max((v - R)^2, (old_v + clip(v - old_v, -c, c) - R)^2), or 0.5 (v - R)^2
//   approx_kl (r - 1) - log r, and whether r left [1 - c, 1 + c]
// The autograd path (ppo_update.cpp) evaluates these on tensors, a minibatch at a time, and
// autograd differentiates them. The plain-C++ path for the mlp (mlp_fast.cpp) evaluates the
// same templates on Dual numbers, which carry the derivative along: its gradient comes from
// this declaration too, with PyTorch's conventions where max and clamp have a kink (a tie of
// max splits the gradient in halves; clamp passes it at its bounds).
#pragma once

#include <algorithm>
#include <cmath>

#include <ATen/ATen.h>

namespace ppo {

// The loss's settings, with no defaults: they come from the run's config (update_options in
// trainer.hpp), whose table declares each one once.
struct LossOptions {
  double clip_coef{};
  bool clip_vloss{};
  double ent_coef{}, vf_coef{};
  bool norm_adv{};
};

// A value and its derivative with respect to one input (forward-mode differentiation).
struct Dual {
  double v = 0, d = 0;
};
inline Dual operator+(Dual a, Dual b) { return {a.v + b.v, a.d + b.d}; }
inline Dual operator-(Dual a, Dual b) { return {a.v - b.v, a.d - b.d}; }
inline Dual operator*(Dual a, Dual b) { return {a.v * b.v, a.d * b.v + a.v * b.d}; }
inline Dual operator+(double a, Dual b) { return {a + b.v, b.d}; }
inline Dual operator-(Dual a, double b) { return {a.v - b, a.d}; }
inline Dual operator*(double a, Dual b) { return {a * b.v, a * b.d}; }
inline Dual larger_of(Dual a, Dual b) {
  if (a.v != b.v) return a.v > b.v ? a : b;
  return {a.v, 0.5 * (a.d + b.d)};
}
inline Dual clamp_to(Dual x, double lo, double hi) {
  return {std::min(std::max(x.v, lo), hi), x.v >= lo && x.v <= hi ? x.d : 0.0};
}

inline at::Tensor larger_of(const at::Tensor& a, const at::Tensor& b) { return at::max(a, b); }
inline at::Tensor clamp_to(const at::Tensor& x, double lo, double hi) { return at::clamp(x, lo, hi); }

template <class T>
T square(const T& x) {
  return x * x;
}

// The clipped surrogate to minimise; `adv` is the (normalised) advantage.
template <class T, class Adv>
T policy_loss(const T& ratio, const Adv& adv, double clip_coef) {
  return larger_of(-adv * ratio, -adv * clamp_to(ratio, 1 - clip_coef, 1 + clip_coef));
}

// The value loss; `value` is the network's, the others the rollout's.
template <class T, class Rollout>
T value_loss(const T& value, const Rollout& old_value, const Rollout& ret, double clip_coef, bool clip_vloss) {
  const T unclipped = square(value - ret);
  if (!clip_vloss) return 0.5 * unclipped;
  const T clipped_value = old_value + clamp_to(value - old_value, -clip_coef, clip_coef);
  return 0.5 * larger_of(unclipped, square(clipped_value - ret));
}

// CleanRL's k3 estimator of KL(old || new) from the log ratio.
template <class T>
T approx_kl(const T& ratio, const T& logratio) {
  return (ratio - 1) - logratio;
}

// 1 where the ratio left the clip range (as a fraction over a batch: clipfrac).
inline at::Tensor clipped(const at::Tensor& ratio, double clip_coef) {
  return ((ratio - 1).abs() > clip_coef).to(at::kFloat);
}
inline double clipped(double ratio, double clip_coef) { return std::abs(ratio - 1) > clip_coef ? 1.0 : 0.0; }

}  // namespace ppo
