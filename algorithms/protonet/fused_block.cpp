#include "fused_block.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <mlh/runtime/cpu_kernel_support.hpp>
#include <torch/autograd.h>

namespace protonet {

namespace {

using mlh::rt::cpu::bf16;
using mlh::rt::cpu::load;
using mlh::rt::cpu::round_to;
using mlh::rt::cpu::store;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// A pooled value's winner: 0-3 for the window's top-left, top-right, bottom-left and
// bottom-right input; kCut where ReLU made the output 0 (no gradient flows back).
constexpr uint8_t kCut = 4;

struct Shape {
  int64_t n, c, h, w;
  int64_t plane() const { return h * w; }
  int64_t ho() const { return h / 2; }
  int64_t wo() const { return w / 2; }
  int64_t pooled() const { return ho() * wo(); }
  // Offset of image n's channel c in an N x C x rows x cols tensor of planes of `size`.
  int64_t at(int64_t image, int64_t channel, int64_t size) const { return (image * c + channel) * size; }
};

// Where winner k of pooled value (i, j) lies in its input plane.
int64_t winner_offset(const Shape& s, int64_t i, int64_t j, uint8_t k) {
  return (2 * i + k / 2) * s.w + 2 * j + k % 2;
}

// Eight running sums in double, so the compiler can keep them in vector registers (a single
// accumulator is a dependency chain it may not reorder) and a plane's mean keeps the digits
// that a large mean against a small spread needs.
template <class T>
MLH_CPU_INLINE double plane_sum(const T* p, int64_t n) {
  double acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += load(p, i + k);
  double sum = 0;
  for (; i < n; ++i) sum += load(p, i);
  for (double a : acc) sum += a;
  return sum;
}

template <class T>
MLH_CPU_INLINE double plane_squared_deviation(const T* p, int64_t n, double mean) {
  double acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) {
      const double d = load(p, i + k) - mean;
      acc[k] += d * d;
    }
  double sum = 0;
  for (; i < n; ++i) sum += (load(p, i) - mean) * (load(p, i) - mean);
  for (double a : acc) sum += a;
  return sum;
}

// Mean and biased variance of channel c over all images. Each plane (a few KB, in L1) gets
// its own mean and squared deviation; the planes combine pairwise (Chan et al.), so a large
// mean does not cancel the variance away as sum(x^2) - sum(x)^2 would.
template <class T>
MLH_CPU_INLINE void channel_moments(const T* x, const Shape& s, int64_t c, double& mean, double& variance) {
  double count = 0, m = 0, m2 = 0;
  const double size = static_cast<double>(s.plane());
  for (int64_t n = 0; n < s.n; ++n) {
    const T* p = x + s.at(n, c, s.plane());
    const double plane_mean = plane_sum(p, s.plane()) / size;
    const double squared = plane_squared_deviation(p, s.plane(), plane_mean);
    const double delta = plane_mean - m, total = count + size;
    m += delta * size / total;
    m2 += squared + delta * delta * count * size / total;
    count = total;
  }
  mean = m;
  variance = m2 / count;
}

// out = max over each 2x2 window of relu((x - mean) * scale + shift), and which input won.
// Ties go to the first in the window's row-major order, as in ATen's max_pool2d; the values
// compared are the batch-norm outputs ATen would compare (rounded to bf16 for bf16 tensors).
// The mean comes off in double before the scale: folded into the shift it would cancel digits
// away where the mean is large against the spread. Each plane is normalized whole, then split
// into four planes, one per window position, so that both loops that compute run over a plane
// at unit stride and vectorize: over a row (14 pooled values of a 28-wide image) a vector
// loop never ran, and the choice ran scalar, with branches. `scratch` holds H * W +
// 4 * (H/2) * (W/2) floats. (A NaN or infinite input makes the channel's statistics NaN, and
// the caller then fills the channel with NaN, as ATen's ops would: the comparisons here never
// see one.)
template <class T>
MLH_CPU_INLINE void normalize_relu_pool(const T* x, T* out, uint8_t* winners, const Shape& s, int64_t c, double mean,
                                        double scale, double shift, float* scratch) {
  const int64_t plane = s.plane(), pooled = s.pooled(), wo = s.wo();
  float* normalized = scratch;
  float* window[4];  // top-left, top-right, bottom-left, bottom-right
  for (int q = 0; q < 4; ++q) window[q] = scratch + plane + q * pooled;
  for (int64_t n = 0; n < s.n; ++n) {
    const T* p = x + s.at(n, c, plane);
    for (int64_t e = 0; e < plane; ++e)
      normalized[e] = round_to<T>(static_cast<float>((load(p, e) - mean) * scale + shift));
    for (int64_t i = 0; i < s.ho(); ++i)  // a last odd row or column is never pooled
      for (int64_t j = 0; j < wo; ++j) {
        const float* top_left = normalized + 2 * i * s.w + 2 * j;
        window[0][i * wo + j] = top_left[0];
        window[1][i * wo + j] = top_left[1];
        window[2][i * wo + j] = top_left[s.w];
        window[3][i * wo + j] = top_left[s.w + 1];
      }
    T* o = out + s.at(n, c, pooled);
    uint8_t* won = winners + s.at(n, c, pooled);
    for (int64_t m = 0; m < pooled; ++m) {
      float best = window[0][m];
      int32_t k = 0;
      for (int32_t q = 1; q < 4; ++q) {
        const bool take = window[q][m] > best;
        best = take ? window[q][m] : best;
        k = take ? q : k;
      }
      const bool cut = !(best > 0.0f);  // ReLU: 0, and no gradient
      store(o, m, cut ? 0.0f : best);
      won[m] = static_cast<uint8_t>(cut ? kCut : k);
    }
  }
}

// Sets channel c of an N x C x H/2 x W/2 tensor to `value`.
template <class T>
void fill_pooled_channel(T* pooled, const Shape& s, int64_t c, T value) {
  for (int64_t n = 0; n < s.n; ++n) std::fill_n(pooled + s.at(n, c, s.pooled()), s.pooled(), value);
}

struct ChannelGradients {
  double weight = 0, bias = 0;
};

// The gradient reaching the batch norm's output is the pooled gradient at each window's
// winner and 0 elsewhere, so batch norm's two reductions, sum(g) (the bias gradient) and
// sum(g * x_hat) (the weight gradient), need only the winners.
template <class T>
MLH_CPU_INLINE ChannelGradients winner_sums(const T* x, const T* grad, const uint8_t* winners, const Shape& s,
                                            int64_t c, double mean, double invstd) {
  ChannelGradients sums;
  for (int64_t n = 0; n < s.n; ++n) {
    const T* p = x + s.at(n, c, s.plane());
    const T* g = grad + s.at(n, c, s.pooled());
    const uint8_t* won = winners + s.at(n, c, s.pooled());
    for (int64_t i = 0; i < s.ho(); ++i)
      for (int64_t j = 0; j < s.wo(); ++j) {
        const uint8_t k = won[i * s.wo() + j];
        if (k == kCut) continue;
        const double gv = load(g, i * s.wo() + j);
        sums.bias += gv;
        sums.weight += gv * (load(p, winner_offset(s, i, j, k)) - mean) * invstd;
      }
  }
  return sums;
}

// Batch norm's input gradient, gamma * invstd * (g - sum(g) / M - x_hat * sum(g x_hat) / M)
// over the channel's M inputs: an affine function of x - mean everywhere, plus
// gamma * invstd * g at the winners. For bf16, a plane is made in float and rounded once.
template <class T>
MLH_CPU_INLINE void input_gradient(const T* x, const T* grad, const uint8_t* winners, T* dx, const Shape& s,
                                   int64_t c, double mean, double invstd, double gamma, const ChannelGradients& sums,
                                   float* plane) {
  const double count = static_cast<double>(s.n * s.plane());
  const double slope = -gamma * invstd * invstd * sums.weight / count;
  const double offset = -gamma * invstd * sums.bias / count;
  const float winner_scale = static_cast<float>(gamma * invstd);
  for (int64_t n = 0; n < s.n; ++n) {
    const T* p = x + s.at(n, c, s.plane());
    T* d = dx + s.at(n, c, s.plane());
    float* f = std::is_same_v<T, float> ? reinterpret_cast<float*>(d) : plane;
    for (int64_t i = 0; i < s.plane(); ++i) f[i] = static_cast<float>(slope * (load(p, i) - mean) + offset);
    const T* g = grad + s.at(n, c, s.pooled());
    const uint8_t* won = winners + s.at(n, c, s.pooled());
    for (int64_t i = 0; i < s.ho(); ++i)
      for (int64_t j = 0; j < s.wo(); ++j) {
        const uint8_t k = won[i * s.wo() + j];
        if (k != kCut) f[winner_offset(s, i, j, k)] += winner_scale * load(g, i * s.wo() + j);
      }
    if constexpr (!std::is_same_v<T, float>)
      for (int64_t i = 0; i < s.plane(); ++i) store(d, i, f[i]);
  }
}

// The forward over channels [begin, end): statistics, then the pooled output and winners.
template <class T>
MLH_CPU_INLINE void forward_channels(const T* x, T* out, uint8_t* winners, double* mean, double* variance,
                                     double* invstd, const double* gamma, const double* beta, const Shape& s, double eps,
                                     int64_t begin, int64_t end, float* scratch) {
  for (int64_t c = begin; c < end; ++c) {
    channel_moments(x, s, c, mean[c], variance[c]);
    invstd[c] = 1.0 / std::sqrt(variance[c] + eps);
    if (!std::isfinite(mean[c]) || !std::isfinite(variance[c])) {  // a NaN or infinity in the channel
      T nan;
      store(&nan, 0, std::numeric_limits<float>::quiet_NaN());
      fill_pooled_channel(out, s, c, nan);
      fill_pooled_channel(winners, s, c, kCut);
      continue;
    }
    normalize_relu_pool(x, out, winners, s, c, mean[c], gamma[c] * invstd[c], beta[c], scratch);
  }
}

// The backward over channels [begin, end): the weight and bias gradients, and the input's.
template <class T>
MLH_CPU_INLINE void backward_channels(const T* x, const T* grad, const uint8_t* winners, T* dx, double* dweight,
                                      double* dbias, const double* mean, const double* invstd, const double* gamma,
                                      const Shape& s, int64_t begin, int64_t end, float* plane) {
  for (int64_t c = begin; c < end; ++c) {
    const ChannelGradients sums = winner_sums(x, grad, winners, s, c, mean[c], invstd[c]);
    dweight[c] = sums.weight;
    dbias[c] = sums.bias;
    if (dx) input_gradient(x, grad, winners, dx, s, c, mean[c], invstd[c], gamma[c], sums, plane);
  }
}

MLH_CPU_CLONES void forward_channels_f32(const float* x, float* out, uint8_t* winners, double* mean, double* variance,
                                         double* invstd, const double* gamma, const double* beta, const Shape& s,
                                         double eps, int64_t begin, int64_t end, float* scratch) {
  forward_channels(x, out, winners, mean, variance, invstd, gamma, beta, s, eps, begin, end, scratch);
}
MLH_CPU_CLONES void forward_channels_bf16(const bf16* x, bf16* out, uint8_t* winners, double* mean, double* variance,
                                          double* invstd, const double* gamma, const double* beta, const Shape& s,
                                          double eps, int64_t begin, int64_t end, float* scratch) {
  forward_channels(x, out, winners, mean, variance, invstd, gamma, beta, s, eps, begin, end, scratch);
}
MLH_CPU_CLONES void backward_channels_f32(const float* x, const float* grad, const uint8_t* winners, float* dx,
                                          double* dweight, double* dbias, const double* mean, const double* invstd,
                                          const double* gamma, const Shape& s, int64_t begin, int64_t end,
                                          float* plane) {
  backward_channels(x, grad, winners, dx, dweight, dbias, mean, invstd, gamma, s, begin, end, plane);
}
MLH_CPU_CLONES void backward_channels_bf16(const bf16* x, const bf16* grad, const uint8_t* winners, bf16* dx,
                                           double* dweight, double* dbias, const double* mean, const double* invstd,
                                           const double* gamma, const Shape& s, int64_t begin, int64_t end,
                                           float* plane) {
  backward_channels(x, grad, winners, dx, dweight, dbias, mean, invstd, gamma, s, begin, end, plane);
}

Shape shape_of(const at::Tensor& x) { return {x.size(0), x.size(1), x.size(2), x.size(3)}; }

// One value per channel of a 1-d tensor; `absent` (1 or 0) where it is undefined (no affine).
std::vector<double> per_channel(const at::Tensor& t, int64_t channels, double absent) {
  if (!t.defined()) return std::vector<double>(static_cast<size_t>(channels), absent);
  const at::Tensor values = t.detach().to(at::kDouble).contiguous();
  return std::vector<double>(values.data_ptr<double>(), values.data_ptr<double>() + channels);
}

struct BatchNormReluPool : public torch::autograd::Function<BatchNormReluPool> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight,
                            const at::Tensor& bias, const at::Tensor& running_mean, const at::Tensor& running_var,
                            double momentum, double eps) {
    const at::Tensor x = input.contiguous();
    const Shape s = shape_of(x);
    const std::vector<double> gamma = per_channel(weight, s.c, 1.0), beta = per_channel(bias, s.c, 0.0);
    at::Tensor out = at::empty({s.n, s.c, s.ho(), s.wo()}, x.options());
    at::Tensor winners = at::empty({s.n, s.c, s.ho(), s.wo()}, x.options().dtype(at::kByte));
    at::Tensor mean = at::empty({s.c}, x.options().dtype(at::kDouble));
    at::Tensor variance = at::empty({s.c}, x.options().dtype(at::kDouble));
    at::Tensor invstd = at::empty({s.c}, x.options().dtype(at::kDouble));
    const bool is_float = x.scalar_type() == at::kFloat;
    at::parallel_for(0, s.c, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> scratch(static_cast<size_t>(s.plane() + 4 * s.pooled()));
      if (is_float)
        forward_channels_f32(x.data_ptr<float>(), out.data_ptr<float>(), winners.data_ptr<uint8_t>(),
                             mean.data_ptr<double>(), variance.data_ptr<double>(), invstd.data_ptr<double>(),
                             gamma.data(), beta.data(), s, eps, begin, end, scratch.data());
      else
        forward_channels_bf16(static_cast<const bf16*>(x.data_ptr()), static_cast<bf16*>(out.data_ptr()),
                              winners.data_ptr<uint8_t>(), mean.data_ptr<double>(), variance.data_ptr<double>(),
                              invstd.data_ptr<double>(), gamma.data(), beta.data(), s, eps, begin, end, scratch.data());
    });
    if (running_mean.defined() && momentum != 0.0) {
      at::NoGradGuard no_grad;
      running_mean.mul_(1.0 - momentum).add_(mean.to(running_mean.scalar_type()), momentum);
    }
    if (running_var.defined() && momentum != 0.0) {
      at::NoGradGuard no_grad;
      const double count = static_cast<double>(s.n * s.plane());  // >= 4: fused_block_applies
      const double unbiased = count / (count - 1);
      running_var.mul_(1.0 - momentum).add_(variance.to(running_var.scalar_type()), momentum * unbiased);
    }
    ctx->save_for_backward({x, weight});
    ctx->saved_data["mean"] = mean;
    ctx->saved_data["invstd"] = invstd;
    ctx->saved_data["winners"] = winners;
    ctx->saved_data["input_needs_grad"] = input.requires_grad();
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor mean = ctx->saved_data["mean"].toTensor();
    const at::Tensor invstd = ctx->saved_data["invstd"].toTensor();
    const at::Tensor winners = ctx->saved_data["winners"].toTensor();
    const bool input_needs_grad = ctx->saved_data["input_needs_grad"].toBool();
    const at::Tensor grad = grad_outputs[0].to(x.scalar_type()).contiguous();
    const Shape s = shape_of(x);
    const std::vector<double> gamma = per_channel(weight, s.c, 1.0);
    at::Tensor dx = input_needs_grad ? at::empty_like(x) : at::Tensor();
    at::Tensor dweight = at::empty({s.c}, x.options().dtype(at::kDouble));
    at::Tensor dbias = at::empty({s.c}, x.options().dtype(at::kDouble));
    const bool is_float = x.scalar_type() == at::kFloat;
    double* dw = dweight.data_ptr<double>();
    double* db = dbias.data_ptr<double>();
    const double* mp = mean.data_ptr<double>();
    const double* ip = invstd.data_ptr<double>();
    at::parallel_for(0, s.c, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> plane(is_float ? 0 : static_cast<size_t>(s.plane()));
      if (is_float)
        backward_channels_f32(x.data_ptr<float>(), grad.data_ptr<float>(), winners.data_ptr<uint8_t>(),
                              input_needs_grad ? dx.data_ptr<float>() : nullptr, dw, db, mp, ip, gamma.data(), s, begin,
                              end, plane.data());
      else
        backward_channels_bf16(static_cast<const bf16*>(x.data_ptr()), static_cast<const bf16*>(grad.data_ptr()),
                               winners.data_ptr<uint8_t>(), input_needs_grad ? static_cast<bf16*>(dx.data_ptr()) : nullptr,
                               dw, db, mp, ip, gamma.data(), s, begin, end, plane.data());
    });
    const bool affine = weight.defined();
    return {dx, affine ? dweight.to(weight.scalar_type()) : at::Tensor(),
            affine ? dbias.to(weight.scalar_type()) : at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(),
            at::Tensor()};
  }
};

}  // namespace

bool fused_block_applies(const at::Tensor& x) {
  return x.defined() && x.device().is_cpu() && (x.scalar_type() == at::kFloat || x.scalar_type() == at::kBFloat16) &&
         x.dim() == 4 && x.size(0) >= 1 &&
         x.size(2) >= 2 && x.size(3) >= 2 && x.is_contiguous();
}

at::Tensor batch_norm_relu_pool(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                                const at::Tensor& running_mean, const at::Tensor& running_var, double momentum,
                                double eps) {
  RECORD_FUNCTION("protonet::batch_norm_relu_pool", std::vector<c10::IValue>({x}));  // a profiler range, as ATen's ops
  return BatchNormReluPool::apply(x, weight, bias, running_mean, running_var, momentum, eps);
}

}  // namespace protonet
