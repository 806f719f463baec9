// The fused block's kernels in NHWC (channels-last): a pixel's channels lie side by side, so
// every loop that computes runs over the channels at unit stride and vectorizes, and each
// thread takes whole images (fused_block_kernels.hpp). Each image's statistics and backward
// sums are kept per channel in double and combined over the images in their order, so the
// result does not depend on how the images were split between threads.
//
// The values are those of fused_block_nchw.cpp to float's rounding: the pooling compares
// values rounded to the tensor's type, ties go to the first input in the window's row-major
// order, and a last odd row or column counts in the statistics but is never pooled.
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
  int64_t image() const { return h * w * c; }  // values in one input image
  int64_t pooled_image() const { return ho() * wo() * c; }
  int64_t pixel(int64_t row, int64_t col) const { return (row * w + col) * c; }  // within an image
  int64_t pooled_pixel(int64_t i, int64_t j) const { return (i * wo() + j) * c; }
};

// The hot loops run in float, 16 lanes to a vector where double would run 8 (or 4), and keep
// what double gave in two ways:
// - x - mean is taken as (x - mean_hi) - mean_lo, the double mean split into two floats, so a
//   large mean against a small spread loses no more digits than subtracting in double did;
// - a sum runs in float over one row (W values at most) and is added to a double per row.

// One image's mean and squared deviation from it, per channel (two passes: the image, H x W x C
// values, is in L2 for the second). `scratch`: 3 x C floats.
template <class T>
MLH_CPU_INLINE void image_moments(const T* x, const Shape& s, double* mean, double* squared, float* scratch) {
  const int64_t c = s.c;
  float* row = scratch;
  float* mean_hi = scratch + c;
  float* mean_lo = scratch + 2 * c;
  for (int64_t k = 0; k < c; ++k) mean[k] = squared[k] = 0;
  for (int64_t r = 0; r < s.h; ++r) {
    for (int64_t k = 0; k < c; ++k) row[k] = 0;
    for (int64_t col = 0; col < s.w; ++col) {
      const T* p = x + s.pixel(r, col);
      for (int64_t k = 0; k < c; ++k) row[k] += load(p, k);
    }
    for (int64_t k = 0; k < c; ++k) mean[k] += row[k];
  }
  for (int64_t k = 0; k < c; ++k) {
    mean[k] /= static_cast<double>(s.h * s.w);
    mean_hi[k] = static_cast<float>(mean[k]);
    mean_lo[k] = static_cast<float>(mean[k] - mean_hi[k]);
  }
  for (int64_t r = 0; r < s.h; ++r) {
    for (int64_t k = 0; k < c; ++k) row[k] = 0;
    for (int64_t col = 0; col < s.w; ++col) {
      const T* p = x + s.pixel(r, col);
      for (int64_t k = 0; k < c; ++k) {
        const float d = (load(p, k) - mean_hi[k]) - mean_lo[k];
        row[k] += d * d;
      }
    }
    for (int64_t k = 0; k < c; ++k) squared[k] += row[k];
  }
}

// What the kernels below need of each channel, in float: the mean split in two (above), and
// the two factors of an affine map (the forward's scale and shift, the backward's slope and
// offset, and the winners' gamma * invstd).
struct ChannelFactors {
  const float* mean_hi;
  const float* mean_lo;
  const float* a;
  const float* b;
  const float* winner_scale;  // the backward's only
};

// One image's pooled output and winners: out = max over each 2x2 window of
// relu((x - mean) * scale + shift), per channel. GCC vectorizes a channel loop only where no
// load depends on a condition and its types fit one vector length, so the normalization and
// the choice (floats, the winner's int and its byte) run as separate loops over `scratch`
// (4 x C floats).
template <class T>
MLH_CPU_INLINE void image_normalize_relu_pool(const T* x, T* out, uint8_t* winners, const Shape& s,
                                              const ChannelFactors& f, float* scratch) {
  const int64_t c = s.c;
  const float* v0 = scratch;  // the window's top-left, top-right, bottom-left, bottom-right inputs, normalized
  const float* v1 = scratch + c;
  const float* v2 = scratch + 2 * c;
  const float* v3 = scratch + 3 * c;
  for (int64_t i = 0; i < s.ho(); ++i)
    for (int64_t j = 0; j < s.wo(); ++j) {
      const T* inputs[4] = {x + s.pixel(2 * i, 2 * j), x + s.pixel(2 * i, 2 * j + 1), x + s.pixel(2 * i + 1, 2 * j),
                            x + s.pixel(2 * i + 1, 2 * j + 1)};
      for (int q = 0; q < 4; ++q) {
        const T* p = inputs[q];
        float* v = scratch + q * c;
        for (int64_t k = 0; k < c; ++k) v[k] = round_to<T>(((load(p, k) - f.mean_hi[k]) - f.mean_lo[k]) * f.a[k] + f.b[k]);
      }
      T* o = out + s.pooled_pixel(i, j);
      uint8_t* won = winners + s.pooled_pixel(i, j);
      for (int64_t k = 0; k < c; ++k) {
        float best = v0[k];
        int32_t winner = 0;
        winner = v1[k] > best ? 1 : winner;
        best = v1[k] > best ? v1[k] : best;
        winner = v2[k] > best ? 2 : winner;
        best = v2[k] > best ? v2[k] : best;
        winner = v3[k] > best ? 3 : winner;
        best = v3[k] > best ? v3[k] : best;
        const bool cut = !(best > 0.0f);  // ReLU: 0, and no gradient
        store(o, k, cut ? 0.0f : best);
        won[k] = static_cast<uint8_t>(cut ? kCut : winner);
      }
    }
}

// One image's share of batch norm's two reductions, sum(g) and sum(g * (x - mean)), per
// channel: the gradient reaching the batch norm's output is the pooled gradient at each
// window's winner and 0 elsewhere. The winners are picked in one loop and summed in another,
// over `scratch` (4 x C floats), as above.
template <class T>
MLH_CPU_INLINE void image_winner_sums(const T* x, const T* grad, const uint8_t* winners, const Shape& s,
                                      const ChannelFactors& f, double* bias_sum, double* weight_sum, float* scratch) {
  const int64_t c = s.c;
  float* chosen = scratch;            // the winning input, per channel
  float* gradient = scratch + c;      // the pooled gradient, 0 where ReLU cut it
  float* row_bias = scratch + 2 * c;  // a pooled row's sums
  float* row_weight = scratch + 3 * c;
  for (int64_t k = 0; k < c; ++k) bias_sum[k] = weight_sum[k] = 0;
  for (int64_t i = 0; i < s.ho(); ++i) {
    for (int64_t k = 0; k < c; ++k) row_bias[k] = row_weight[k] = 0;
    for (int64_t j = 0; j < s.wo(); ++j) {
      const T* inputs[4] = {x + s.pixel(2 * i, 2 * j), x + s.pixel(2 * i, 2 * j + 1), x + s.pixel(2 * i + 1, 2 * j),
                            x + s.pixel(2 * i + 1, 2 * j + 1)};
      const T* g = grad + s.pooled_pixel(i, j);
      const uint8_t* won = winners + s.pooled_pixel(i, j);
      // Picked by multiplying with 0 or 1 (see image_input_gradient), one window position a
      // loop: with the four comparisons of won[k] in one loop GCC turns them into branches.
      for (int64_t k = 0; k < c; ++k) chosen[k] = 0;
      for (uint8_t q = 0; q < 4; ++q) {
        const T* p = inputs[q];
        for (int64_t k = 0; k < c; ++k) chosen[k] += load(p, k) * static_cast<float>(won[k] == q);
      }
      for (int64_t k = 0; k < c; ++k) gradient[k] = load(g, k) * static_cast<float>(won[k] != kCut);
      for (int64_t k = 0; k < c; ++k) {
        row_bias[k] += gradient[k];
        row_weight[k] += gradient[k] * ((chosen[k] - f.mean_hi[k]) - f.mean_lo[k]);
      }
    }
    for (int64_t k = 0; k < c; ++k) {
      bias_sum[k] += row_bias[k];
      weight_sum[k] += row_weight[k];
    }
  }
}

// One image's input gradient: slope * (x - mean) + offset everywhere, plus winner_scale * g
// at the winners, made in float (in dx itself for fp32, in `scratch`, C floats, for bf16) and
// rounded once.
template <class T>
MLH_CPU_INLINE void image_input_gradient(const T* x, const T* grad, const uint8_t* winners, T* dx, const Shape& s,
                                         const ChannelFactors& f, float* scratch) {
  const int64_t c = s.c;
  for (int64_t row = 0; row < s.h; ++row)
    for (int64_t col = 0; col < s.w; ++col) {
      const T* p = x + s.pixel(row, col);
      T* d = dx + s.pixel(row, col);
      float* out = std::is_same_v<T, float> ? reinterpret_cast<float*>(d) : scratch;
      for (int64_t k = 0; k < c; ++k) out[k] = ((load(p, k) - f.mean_hi[k]) - f.mean_lo[k]) * f.a[k] + f.b[k];
      if (row < 2 * s.ho() && col < 2 * s.wo()) {  // past the last full window, no pooled gradient
        const uint8_t position = static_cast<uint8_t>((row % 2) * 2 + col % 2);
        const T* g = grad + s.pooled_pixel(row / 2, col / 2);
        const uint8_t* won = winners + s.pooled_pixel(row / 2, col / 2);
        // Multiplied by 1 at the winner and 0 elsewhere: GCC leaves a choice between the two
        // (won[k] == position ? ... : 0) a branch here, scalar and mispredicted at random
        // winners. A non-finite g gives the same as a choice would, since it makes the whole
        // channel's offset non-finite anyway.
        for (int64_t k = 0; k < c; ++k)
          out[k] += static_cast<float>(won[k] == position) * f.winner_scale[k] * load(g, k);
      }
      if constexpr (!std::is_same_v<T, float>)
        for (int64_t k = 0; k < c; ++k) store(d, k, out[k]);
    }
}

// Compiled once per instruction set; the image loops run in at::parallel_for over images.
MLH_CPU_CLONES void moments_f32(const float* x, const Shape& s, double* mean, double* squared, float* scratch) {
  image_moments(x, s, mean, squared, scratch);
}
MLH_CPU_CLONES void moments_bf16(const bf16* x, const Shape& s, double* mean, double* squared, float* scratch) {
  image_moments(x, s, mean, squared, scratch);
}
MLH_CPU_CLONES void pool_f32(const float* x, float* out, uint8_t* winners, const Shape& s, const ChannelFactors& f,
                             float* scratch) {
  image_normalize_relu_pool(x, out, winners, s, f, scratch);
}
MLH_CPU_CLONES void pool_bf16(const bf16* x, bf16* out, uint8_t* winners, const Shape& s, const ChannelFactors& f,
                              float* scratch) {
  image_normalize_relu_pool(x, out, winners, s, f, scratch);
}
MLH_CPU_CLONES void winner_sums_f32(const float* x, const float* grad, const uint8_t* winners, const Shape& s,
                                    const ChannelFactors& f, double* bias_sum, double* weight_sum, float* scratch) {
  image_winner_sums(x, grad, winners, s, f, bias_sum, weight_sum, scratch);
}
MLH_CPU_CLONES void winner_sums_bf16(const bf16* x, const bf16* grad, const uint8_t* winners, const Shape& s,
                                     const ChannelFactors& f, double* bias_sum, double* weight_sum, float* scratch) {
  image_winner_sums(x, grad, winners, s, f, bias_sum, weight_sum, scratch);
}
MLH_CPU_CLONES void input_gradient_f32(const float* x, const float* grad, const uint8_t* winners, float* dx,
                                       const Shape& s, const ChannelFactors& f, float* scratch) {
  image_input_gradient(x, grad, winners, dx, s, f, scratch);
}
MLH_CPU_CLONES void input_gradient_bf16(const bf16* x, const bf16* grad, const uint8_t* winners, bf16* dx,
                                        const Shape& s, const ChannelFactors& f, float* scratch) {
  image_input_gradient(x, grad, winners, dx, s, f, scratch);
}

// Each channel's factors in float (ChannelFactors points into these).
struct ChannelFactorValues {
  std::vector<float> mean_hi, mean_lo, a, b, winner_scale;
  ChannelFactorValues(const double* mean, const std::vector<double>& a_values, const std::vector<double>& b_values,
                      const std::vector<double>& winner_scale_values = {}) {
    for (size_t k = 0; k < a_values.size(); ++k) {
      mean_hi.push_back(static_cast<float>(mean[k]));
      mean_lo.push_back(static_cast<float>(mean[k] - mean_hi[k]));
      a.push_back(static_cast<float>(a_values[k]));
      b.push_back(static_cast<float>(b_values[k]));
    }
    for (double v : winner_scale_values) winner_scale.push_back(static_cast<float>(v));
  }
  ChannelFactors view() const { return {mean_hi.data(), mean_lo.data(), a.data(), b.data(), winner_scale.data()}; }
};

Shape shape_of(const at::Tensor& x) { return {dims_of(x)}; }

// Typed views of a tensor's data, for the per-type kernels above.
template <class T>
T* data(const at::Tensor& t) {
  return static_cast<T*>(t.data_ptr());
}

}  // namespace

BlockForward forward_nhwc(const at::Tensor& x, const std::vector<double>& gamma, const std::vector<double>& beta,
                          double eps) {
  const Shape s = shape_of(x);
  const bool is_float = x.scalar_type() == at::kFloat;
  BlockForward f;
  f.out = at::empty({s.n, s.c, s.ho(), s.wo()}, x.options().memory_format(at::MemoryFormat::ChannelsLast));
  f.winners = at::empty({s.n, s.ho(), s.wo(), s.c}, x.options().dtype(at::kByte));
  f.mean = at::empty({s.c}, x.options().dtype(at::kDouble));
  f.variance = at::empty({s.c}, x.options().dtype(at::kDouble));
  f.invstd = at::empty({s.c}, x.options().dtype(at::kDouble));

  // Each image's moments, then the images combined pairwise in order (Chan et al.), so a
  // large mean does not cancel the variance away.
  std::vector<double> image_mean(static_cast<size_t>(s.n * s.c)), image_squared(image_mean.size());
  at::parallel_for(0, s.n, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> scratch(static_cast<size_t>(3 * s.c));
    for (int64_t n = begin; n < end; ++n) {
      double* m = image_mean.data() + n * s.c;
      double* q = image_squared.data() + n * s.c;
      if (is_float)
        moments_f32(data<const float>(x) + n * s.image(), s, m, q, scratch.data());
      else
        moments_bf16(data<const bf16>(x) + n * s.image(), s, m, q, scratch.data());
    }
  });
  double* mean = f.mean.data_ptr<double>();
  double* variance = f.variance.data_ptr<double>();
  double* invstd = f.invstd.data_ptr<double>();
  const double pixels = static_cast<double>(s.h * s.w);
  std::vector<double> scale(static_cast<size_t>(s.c)), shift(beta);
  std::vector<int64_t> not_finite;
  for (int64_t k = 0; k < s.c; ++k) {
    double count = 0, m = 0, m2 = 0;
    for (int64_t n = 0; n < s.n; ++n) {
      const double delta = image_mean[n * s.c + k] - m, total = count + pixels;
      m += delta * pixels / total;
      m2 += image_squared[n * s.c + k] + delta * delta * count * pixels / total;
      count = total;
    }
    mean[k] = m;
    variance[k] = m2 / count;
    invstd[k] = 1.0 / std::sqrt(variance[k] + eps);
    scale[k] = gamma[k] * invstd[k];
    if (!std::isfinite(mean[k]) || !std::isfinite(variance[k])) not_finite.push_back(k);
  }

  const ChannelFactorValues factors(mean, scale, shift);
  const ChannelFactors normalize = factors.view();
  at::parallel_for(0, s.n, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> scratch(static_cast<size_t>(4 * s.c));
    for (int64_t n = begin; n < end; ++n) {
      uint8_t* won = f.winners.data_ptr<uint8_t>() + n * s.pooled_image();
      if (is_float)
        pool_f32(data<const float>(x) + n * s.image(), data<float>(f.out) + n * s.pooled_image(), won, s, normalize,
                 scratch.data());
      else
        pool_bf16(data<const bf16>(x) + n * s.image(), data<bf16>(f.out) + n * s.pooled_image(), won, s, normalize,
                  scratch.data());
    }
  });
  // A NaN or infinity in a channel makes its statistics NaN, and the channel's output NaN, as
  // ATen's ops would (the comparisons above cut NaN to 0).
  for (int64_t k : not_finite) {
    f.out.select(1, k).fill_(std::numeric_limits<float>::quiet_NaN());
    f.winners.select(3, k).fill_(kCut);
  }
  return f;
}

BlockBackward backward_nhwc(const at::Tensor& x, const at::Tensor& grad, const BlockForward& saved,
                            const std::vector<double>& gamma, bool input_needs_grad) {
  const Shape s = shape_of(x);
  const bool is_float = x.scalar_type() == at::kFloat;
  const double* mean = saved.mean.data_ptr<double>();
  const double* invstd = saved.invstd.data_ptr<double>();
  const uint8_t* winners = saved.winners.data_ptr<uint8_t>();

  std::vector<double> image_bias(static_cast<size_t>(s.n * s.c)), image_weight(image_bias.size());
  const std::vector<double> unused(static_cast<size_t>(s.c));
  const ChannelFactorValues centre(mean, unused, unused);
  const ChannelFactors centring = centre.view();
  at::parallel_for(0, s.n, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> scratch(static_cast<size_t>(4 * s.c));
    for (int64_t n = begin; n < end; ++n) {
      const uint8_t* won = winners + n * s.pooled_image();
      double* b = image_bias.data() + n * s.c;
      double* w = image_weight.data() + n * s.c;
      if (is_float)
        winner_sums_f32(data<const float>(x) + n * s.image(), data<const float>(grad) + n * s.pooled_image(), won, s,
                        centring, b, w, scratch.data());
      else
        winner_sums_bf16(data<const bf16>(x) + n * s.image(), data<const bf16>(grad) + n * s.pooled_image(), won, s,
                         centring, b, w, scratch.data());
    }
  });
  BlockBackward b;
  b.dweight = at::zeros({s.c}, x.options().dtype(at::kDouble));
  b.dbias = at::zeros({s.c}, x.options().dtype(at::kDouble));
  double* dweight = b.dweight.data_ptr<double>();
  double* dbias = b.dbias.data_ptr<double>();
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t k = 0; k < s.c; ++k) {
      dbias[k] += image_bias[n * s.c + k];
      dweight[k] += image_weight[n * s.c + k];
    }
  for (int64_t k = 0; k < s.c; ++k) dweight[k] *= invstd[k];  // sum(g * x_hat)
  if (!input_needs_grad) return b;

  // gamma * invstd * (g - sum(g) / M - x_hat * sum(g x_hat) / M) over the channel's M inputs.
  const double count = static_cast<double>(s.n * s.h * s.w);
  std::vector<double> slope(static_cast<size_t>(s.c)), offset(slope.size()), winner_scale(slope.size());
  for (int64_t k = 0; k < s.c; ++k) {
    slope[k] = -gamma[k] * invstd[k] * invstd[k] * dweight[k] / count;
    offset[k] = -gamma[k] * invstd[k] * dbias[k] / count;
    winner_scale[k] = gamma[k] * invstd[k];
  }
  const ChannelFactorValues factors(mean, slope, offset, winner_scale);
  const ChannelFactors gradient = factors.view();
  b.dx = at::empty_like(x, at::MemoryFormat::ChannelsLast);
  at::parallel_for(0, s.n, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> scratch(static_cast<size_t>(s.c));
    for (int64_t n = begin; n < end; ++n) {
      const uint8_t* won = winners + n * s.pooled_image();
      if (is_float)
        input_gradient_f32(data<const float>(x) + n * s.image(), data<const float>(grad) + n * s.pooled_image(), won,
                           data<float>(b.dx) + n * s.image(), s, gradient, scratch.data());
      else
        input_gradient_bf16(data<const bf16>(x) + n * s.image(), data<const bf16>(grad) + n * s.pooled_image(), won,
                            data<bf16>(b.dx) + n * s.image(), s, gradient, scratch.data());
    }
  });
  return b;
}

}  // namespace protonet::fused_block_detail
