// The fused block's kernels in NCHW: each channel's planes are worked one at a time, in L1,
// and the threads split the channels (fused_block_kernels.hpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include <ATen/Parallel.h>
#include <mlh/runtime/cpu_kernel_support.hpp>

#include "fused_block_kernels.hpp"

namespace protonet::fused_block_detail {

namespace {

using mlh::rt::cpu::bf16;
using mlh::rt::cpu::load;
using mlh::rt::cpu::round_to;
using mlh::rt::cpu::store;

struct Shape : BlockDims {
  int64_t plane() const { return h * w; }
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

Shape shape_of(const at::Tensor& x) { return {dims_of(x)}; }

}  // namespace

BlockForward forward_nchw(const at::Tensor& x, const std::vector<double>& gamma, const std::vector<double>& beta,
                          double eps) {
  const Shape s = shape_of(x);
  BlockForward f;
  f.out = at::empty({s.n, s.c, s.ho(), s.wo()}, x.options());
  f.winners = at::empty({s.n, s.c, s.ho(), s.wo()}, x.options().dtype(at::kByte));
  f.mean = at::empty({s.c}, x.options().dtype(at::kDouble));
  f.variance = at::empty({s.c}, x.options().dtype(at::kDouble));
  f.invstd = at::empty({s.c}, x.options().dtype(at::kDouble));
  const bool is_float = x.scalar_type() == at::kFloat;
  at::parallel_for(0, s.c, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> scratch(static_cast<size_t>(s.plane() + 4 * s.pooled()));
    if (is_float)
      forward_channels_f32(x.data_ptr<float>(), f.out.data_ptr<float>(), f.winners.data_ptr<uint8_t>(),
                           f.mean.data_ptr<double>(), f.variance.data_ptr<double>(), f.invstd.data_ptr<double>(),
                           gamma.data(), beta.data(), s, eps, begin, end, scratch.data());
    else
      forward_channels_bf16(static_cast<const bf16*>(x.data_ptr()), static_cast<bf16*>(f.out.data_ptr()),
                            f.winners.data_ptr<uint8_t>(), f.mean.data_ptr<double>(), f.variance.data_ptr<double>(),
                            f.invstd.data_ptr<double>(), gamma.data(), beta.data(), s, eps, begin, end, scratch.data());
  });
  return f;
}

BlockBackward backward_nchw(const at::Tensor& x, const at::Tensor& grad, const BlockForward& saved,
                            const std::vector<double>& gamma, bool input_needs_grad) {
  const Shape s = shape_of(x);
  BlockBackward b;
  if (input_needs_grad) b.dx = at::empty_like(x);
  b.dweight = at::empty({s.c}, x.options().dtype(at::kDouble));
  b.dbias = at::empty({s.c}, x.options().dtype(at::kDouble));
  const bool is_float = x.scalar_type() == at::kFloat;
  double* dw = b.dweight.data_ptr<double>();
  double* db = b.dbias.data_ptr<double>();
  const double* mp = saved.mean.data_ptr<double>();
  const double* ip = saved.invstd.data_ptr<double>();
  const uint8_t* winners = saved.winners.data_ptr<uint8_t>();
  at::parallel_for(0, s.c, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> plane(is_float ? 0 : static_cast<size_t>(s.plane()));
    if (is_float)
      backward_channels_f32(x.data_ptr<float>(), grad.data_ptr<float>(), winners,
                            input_needs_grad ? b.dx.data_ptr<float>() : nullptr, dw, db, mp, ip, gamma.data(), s, begin,
                            end, plane.data());
    else
      backward_channels_bf16(static_cast<const bf16*>(x.data_ptr()), static_cast<const bf16*>(grad.data_ptr()), winners,
                             input_needs_grad ? static_cast<bf16*>(b.dx.data_ptr()) : nullptr, dw, db, mp, ip,
                             gamma.data(), s, begin, end, plane.data());
  });
  return b;
}

}  // namespace protonet::fused_block_detail
