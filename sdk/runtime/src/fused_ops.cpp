// Fused CPU kernels of a transformer block (see fused_ops.hpp).
//
// The loops are plain C++ over float and bfloat16 storage, written so that GCC vectorizes them,
// and compiled once per instruction set (cpu_kernel_support.hpp); at::parallel_for spreads the
// rows over LibTorch's own OpenMP threads (this file is compiled with -fopenmp, so that its
// inline OpenMP loop runs in parallel). Rows are independent and each row's reductions run in
// one fixed order, so results do not depend on the thread count.
#include "mlh/runtime/fused_ops.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/autograd.h>

#include "mlh/runtime/cpu_kernel_support.hpp"

namespace mlh::rt {
namespace {

using cpu::bf16;
using cpu::load;
using cpu::store;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Rows per thread: below about 32768 elements work is not worth a thread (ATen's grain for its
// element-wise ops, at::internal::GRAIN_SIZE).
int64_t grain(int64_t row_length) { return std::max<int64_t>(32768 / std::max<int64_t>(row_length, 1), 1); }

MLH_CPU_INLINE float sigmoid(float x) { return 1.0f / (1.0f + cpu::exp_approx(-x)); }

// bfloat16 rows are widened to float before the arithmetic and narrowed after it, in loops of
// their own: loops that convert and compute at once vectorized poorly (bf16 ran 3-5x slower
// than float), these run at memory speed.
MLH_CPU_INLINE void widen(const bf16* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = load(in, i);
}
MLH_CPU_INLINE void narrow(const float* in, bf16* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) store(out, i, in[i]);
}

// ---- RMSNorm of a residual sum --------------------------------------------------------------

// One row: s = x (+ r); out = s * rstd, rstd = 1 / sqrt(mean(s^2) + eps). Returns rstd.
template <bool kResidual>
MLH_CPU_INLINE float rms_forward_row(const float* x, const float* r, float* out, float* s, int64_t d, float eps) {
  float acc[16] = {};
  int64_t i = 0;
  for (; i + 16 <= d; i += 16)
    for (int k = 0; k < 16; ++k) {
      const float v = kResidual ? x[i + k] + r[i + k] : x[i + k];
      s[i + k] = v;
      acc[k] += v * v;
    }
  float squares = 0;
  for (; i < d; ++i) {
    const float v = kResidual ? x[i] + r[i] : x[i];
    s[i] = v;
    squares += v * v;
  }
  for (float a : acc) squares += a;
  const float inv = 1.0f / std::sqrt(squares / static_cast<float>(d) + eps);
  for (i = 0; i < d; ++i) out[i] = s[i] * inv;
  return inv;
}

// One row: ds = rstd * g - s * rstd^3 * sum(g * s) / d.
MLH_CPU_INLINE void rms_backward_row(const float* g, const float* s, float inv, float* ds, int64_t d) {
  float acc[16] = {};
  int64_t i = 0;
  for (; i + 16 <= d; i += 16)
    for (int k = 0; k < 16; ++k) acc[k] += g[i + k] * s[i + k];
  float dot = 0;
  for (; i < d; ++i) dot += g[i] * s[i];
  for (float a : acc) dot += a;
  const float coef = inv * inv * inv * dot / static_cast<float>(d);
  for (i = 0; i < d; ++i) ds[i] = inv * g[i] - coef * s[i];
}

// Rows [begin, end). s_keep and rstd_keep (float) are kept where the backward needs them, else
// null; scratch holds 4 rows of floats.
MLH_CPU_CLONES void rms_forward_f32(const float* x, const float* r, float* out, float* s_keep, float* rstd_keep,
                                    int64_t begin, int64_t end, int64_t d, float eps, float* scratch) {
  for (int64_t row = begin; row < end; ++row) {
    float* s = s_keep ? s_keep + row * d : scratch;
    const float inv = r ? rms_forward_row<true>(x + row * d, r + row * d, out + row * d, s, d, eps)
                        : rms_forward_row<false>(x + row * d, nullptr, out + row * d, s, d, eps);
    if (rstd_keep) rstd_keep[row] = inv;
  }
}
MLH_CPU_CLONES void rms_forward_bf16(const bf16* x, const bf16* r, bf16* out, float* s_keep, float* rstd_keep,
                                     int64_t begin, int64_t end, int64_t d, float eps, float* scratch) {
  float *xf = scratch, *rf = scratch + d, *of = scratch + 2 * d;
  for (int64_t row = begin; row < end; ++row) {
    float* s = s_keep ? s_keep + row * d : scratch + 3 * d;
    widen(x + row * d, xf, d);
    float inv;
    if (r) {
      widen(r + row * d, rf, d);
      inv = rms_forward_row<true>(xf, rf, of, s, d, eps);
    } else {
      inv = rms_forward_row<false>(xf, nullptr, of, s, d, eps);
    }
    narrow(of, out + row * d, d);
    if (rstd_keep) rstd_keep[row] = inv;
  }
}
MLH_CPU_CLONES void rms_backward_f32(const float* g, const float* s, const float* rstd, float* ds, int64_t begin,
                                     int64_t end, int64_t d, float*) {
  for (int64_t row = begin; row < end; ++row) rms_backward_row(g + row * d, s + row * d, rstd[row], ds + row * d, d);
}
MLH_CPU_CLONES void rms_backward_bf16(const bf16* g, const float* s, const float* rstd, bf16* ds, int64_t begin,
                                      int64_t end, int64_t d, float* scratch) {
  float *gf = scratch, *df = scratch + d;
  for (int64_t row = begin; row < end; ++row) {
    widen(g + row * d, gf, d);
    rms_backward_row(gf, s + row * d, rstd[row], df, d);
    narrow(df, ds + row * d, d);
  }
}

int64_t rows_of(const at::Tensor& t) { return t.numel() / std::max<int64_t>(t.size(-1), 1); }

// out = rms_norm(x + r); with keep, also s (float, x's shape) and rstd (float, one per row).
at::Tensor rms_forward(const at::Tensor& x, const at::Tensor& r, double eps, at::Tensor* s, at::Tensor* rstd) {
  const int64_t d = x.size(-1), rows = rows_of(x);
  at::Tensor out = at::empty_like(x);
  if (s) *s = at::empty(x.sizes(), x.options().dtype(at::kFloat));
  if (rstd) *rstd = at::empty({rows}, x.options().dtype(at::kFloat));
  float* sp = s ? s->data_ptr<float>() : nullptr;
  float* rp = rstd ? rstd->data_ptr<float>() : nullptr;
  const bool is_float = x.scalar_type() == at::kFloat;
  const void* xp = x.data_ptr();
  const void* resp = r.defined() ? r.data_ptr() : nullptr;
  void* op = out.data_ptr();
  const auto e = static_cast<float>(eps);
  at::parallel_for(
      0, rows, grain(d),
      [&](int64_t begin, int64_t end) {
        std::vector<float> scratch(static_cast<size_t>(4 * d));
        if (is_float)
          rms_forward_f32(static_cast<const float*>(xp), static_cast<const float*>(resp), static_cast<float*>(op), sp,
                          rp, begin, end, d, e, scratch.data());
        else
          rms_forward_bf16(static_cast<const bf16*>(xp), static_cast<const bf16*>(resp), static_cast<bf16*>(op), sp, rp,
                           begin, end, d, e, scratch.data());
      });
  return out;
}

// The backward shared by both norms: the gradient of s, which x and the residual both get.
at::Tensor rms_backward(const at::Tensor& grad, const at::Tensor& s, const at::Tensor& rstd) {
  const at::Tensor g = grad.contiguous();
  const int64_t d = g.size(-1);
  at::Tensor ds = at::empty_like(g);
  const bool is_float = g.scalar_type() == at::kFloat;
  at::parallel_for(
      0, rows_of(g), grain(d),
      [&](int64_t begin, int64_t end) {
        std::vector<float> scratch(is_float ? 0 : static_cast<size_t>(2 * d));
        if (is_float)
          rms_backward_f32(g.data_ptr<float>(), s.data_ptr<float>(), rstd.data_ptr<float>(), ds.data_ptr<float>(),
                           begin, end, d, nullptr);
        else
          rms_backward_bf16(static_cast<const bf16*>(g.data_ptr()), s.data_ptr<float>(), rstd.data_ptr<float>(),
                            static_cast<bf16*>(ds.data_ptr()), begin, end, d, scratch.data());
      });
  return ds;
}

// Two functions, since an autograd function takes no undefined tensor as an input.
struct AddRmsNorm : public torch::autograd::Function<AddRmsNorm> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& residual, double eps) {
    at::Tensor s, rstd;
    at::Tensor out = rms_forward(x, residual, eps, &s, &rstd);
    ctx->save_for_backward({s, rstd});
    return out;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor ds = rms_backward(grads[0], saved[0], saved[1]);
    return {ds, ds, at::Tensor()};
  }
};

struct RmsNorm : public torch::autograd::Function<RmsNorm> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, double eps) {
    at::Tensor s, rstd;
    at::Tensor out = rms_forward(x, at::Tensor(), eps, &s, &rstd);
    ctx->save_for_backward({s, rstd});
    return out;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    return {rms_backward(grads[0], saved[0], saved[1]), at::Tensor()};
  }
};

at::Tensor rms_norm_in_aten_ops(const at::Tensor& s, double eps) {
  const at::Tensor s32 = s.to(at::kFloat);
  return (s32 * at::rsqrt(s32.square().mean(-1, /*keepdim=*/true) + eps)).to(s.scalar_type());
}

// ---- SwiGLU's gate ---------------------------------------------------------------------------

MLH_CPU_INLINE void silu_mul_row(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t j = 0; j < n; ++j) out[j] = gate[j] * sigmoid(gate[j]) * up[j];
}

// d gate = grad * up * sigmoid(gate) * (1 + gate * (1 - sigmoid(gate))) (silu's derivative, as
// ATen's silu_backward), d up = grad * silu(gate).
MLH_CPU_INLINE void silu_mul_backward_row(const float* grad, const float* gate, const float* up, float* d_gate,
                                          float* d_up, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    const float sig = sigmoid(gate[j]);
    d_gate[j] = grad[j] * up[j] * sig * (1.0f + gate[j] * (1.0f - sig));
    d_up[j] = grad[j] * gate[j] * sig;
  }
}

// Rows [begin, end) of gate_up [rows, 2n] -> out [rows, n]; bf16's scratch holds 3n floats.
MLH_CPU_CLONES void silu_mul_forward_f32(const float* gu, float* out, int64_t begin, int64_t end, int64_t n, float*) {
  for (int64_t row = begin; row < end; ++row) silu_mul_row(gu + row * 2 * n, gu + row * 2 * n + n, out + row * n, n);
}
MLH_CPU_CLONES void silu_mul_forward_bf16(const bf16* gu, bf16* out, int64_t begin, int64_t end, int64_t n,
                                          float* scratch) {
  float *in = scratch, *of = scratch + 2 * n;
  for (int64_t row = begin; row < end; ++row) {
    widen(gu + row * 2 * n, in, 2 * n);
    silu_mul_row(in, in + n, of, n);
    narrow(of, out + row * n, n);
  }
}
// bf16's scratch holds 5n floats.
MLH_CPU_CLONES void silu_mul_backward_f32(const float* g, const float* gu, float* dgu, int64_t begin, int64_t end,
                                          int64_t n, float*) {
  for (int64_t row = begin; row < end; ++row) {
    const float* in = gu + row * 2 * n;
    silu_mul_backward_row(g + row * n, in, in + n, dgu + row * 2 * n, dgu + row * 2 * n + n, n);
  }
}
MLH_CPU_CLONES void silu_mul_backward_bf16(const bf16* g, const bf16* gu, bf16* dgu, int64_t begin, int64_t end,
                                           int64_t n, float* scratch) {
  float *gf = scratch, *in = scratch + n, *df = scratch + 3 * n;
  for (int64_t row = begin; row < end; ++row) {
    widen(g + row * n, gf, n);
    widen(gu + row * 2 * n, in, 2 * n);
    silu_mul_backward_row(gf, in, in + n, df, df + n, n);
    narrow(df, dgu + row * 2 * n, 2 * n);
  }
}

at::Tensor silu_mul_forward(const at::Tensor& gate_up) {
  const int64_t n = gate_up.size(-1) / 2;
  std::vector<int64_t> shape = gate_up.sizes().vec();
  shape.back() = n;
  at::Tensor out = at::empty(shape, gate_up.options());
  const bool is_float = gate_up.scalar_type() == at::kFloat;
  at::parallel_for(
      0, rows_of(gate_up), grain(n),
      [&](int64_t begin, int64_t end) {
        const cpu::DenormalsFlushed flushed;  // sigmoid's saturated side, computed in every lane
        std::vector<float> scratch(is_float ? 0 : static_cast<size_t>(3 * n));
        if (is_float)
          silu_mul_forward_f32(gate_up.data_ptr<float>(), out.data_ptr<float>(), begin, end, n, nullptr);
        else
          silu_mul_forward_bf16(static_cast<const bf16*>(gate_up.data_ptr()), static_cast<bf16*>(out.data_ptr()), begin,
                                end, n, scratch.data());
      });
  return out;
}

struct SiluMul : public torch::autograd::Function<SiluMul> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& gate_up) {
    ctx->save_for_backward({gate_up});
    return silu_mul_forward(gate_up);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const at::Tensor gate_up = ctx->get_saved_variables()[0];
    const at::Tensor g = grads[0].contiguous().to(gate_up.scalar_type());
    const int64_t n = gate_up.size(-1) / 2;
    at::Tensor d_gate_up = at::empty_like(gate_up);
    const bool is_float = gate_up.scalar_type() == at::kFloat;
    at::parallel_for(
        0, rows_of(gate_up), grain(2 * n),
        [&](int64_t begin, int64_t end) {
          const cpu::DenormalsFlushed flushed;
          std::vector<float> scratch(is_float ? 0 : static_cast<size_t>(5 * n));
          if (is_float)
            silu_mul_backward_f32(g.data_ptr<float>(), gate_up.data_ptr<float>(), d_gate_up.data_ptr<float>(), begin,
                                  end, n, nullptr);
          else
            silu_mul_backward_bf16(static_cast<const bf16*>(g.data_ptr()), static_cast<const bf16*>(gate_up.data_ptr()),
                                   static_cast<bf16*>(d_gate_up.data_ptr()), begin, end, n, scratch.data());
        });
    return {d_gate_up};
  }
};

// ---- Rotary embedding and the split into heads -------------------------------------------------

using cpu::rotate_row;

// Where row (b, pos)'s head h of q, k or v lies in a [B, H, S, D] tensor.
MLH_CPU_INLINE int64_t head_offset(int64_t row, int64_t h, int64_t seq, int64_t heads, int64_t d) {
  return ((row / seq * heads + h) * seq + row % seq) * d;
}

// The forward over rows (b, s) in [begin, end): qkv [B, S, 3, H, D] -> q, k, v [B, H, S, D],
// q and k rotated. bf16's scratch holds 3HD + D floats.
MLH_CPU_CLONES void heads_forward_f32(const float* qkv, float* q, float* k, float* v, const float* cos,
                                      const float* sin, int64_t begin, int64_t end, int64_t seq, int64_t heads,
                                      int64_t d, float*) {
  float* parts[3] = {q, k, v};
  for (int64_t row = begin; row < end; ++row) {
    const float* c = cos ? cos + row % seq * d : nullptr;
    const float* s = sin ? sin + row % seq * d : nullptr;
    for (int part = 0; part < 3; ++part)
      for (int64_t h = 0; h < heads; ++h)
        rotate_row<false>(qkv + (row * 3 + part) * heads * d + h * d, parts[part] + head_offset(row, h, seq, heads, d),
                          part < 2 ? c : nullptr, s, d);
  }
}
MLH_CPU_CLONES void heads_forward_bf16(const bf16* qkv, bf16* q, bf16* k, bf16* v, const float* cos,
                                       const float* sin, int64_t begin, int64_t end, int64_t seq, int64_t heads,
                                       int64_t d, float* scratch) {
  bf16* parts[3] = {q, k, v};
  float *packed = scratch, *one = scratch + 3 * heads * d;
  for (int64_t row = begin; row < end; ++row) {
    const float* c = cos ? cos + row % seq * d : nullptr;
    const float* s = sin ? sin + row % seq * d : nullptr;
    widen(qkv + row * 3 * heads * d, packed, 3 * heads * d);
    for (int part = 0; part < 3; ++part)
      for (int64_t h = 0; h < heads; ++h) {
        rotate_row<false>(packed + (part * heads + h) * d, one, part < 2 ? c : nullptr, s, d);
        narrow(one, parts[part] + head_offset(row, h, seq, heads, d), d);
      }
  }
}
// The backward: gradients of q, k, v [B, H, S, D] -> of qkv [B, S, 3, H, D], q's and k's
// rotated back.
MLH_CPU_CLONES void heads_backward_f32(float* dqkv, const float* dq, const float* dk, const float* dv,
                                       const float* cos, const float* sin, int64_t begin, int64_t end, int64_t seq,
                                       int64_t heads, int64_t d, float*) {
  const float* parts[3] = {dq, dk, dv};
  for (int64_t row = begin; row < end; ++row) {
    const float* c = cos ? cos + row % seq * d : nullptr;
    const float* s = sin ? sin + row % seq * d : nullptr;
    for (int part = 0; part < 3; ++part)
      for (int64_t h = 0; h < heads; ++h)
        rotate_row<true>(parts[part] + head_offset(row, h, seq, heads, d), dqkv + (row * 3 + part) * heads * d + h * d,
                         part < 2 ? c : nullptr, s, d);
  }
}
MLH_CPU_CLONES void heads_backward_bf16(bf16* dqkv, const bf16* dq, const bf16* dk, const bf16* dv,
                                        const float* cos, const float* sin, int64_t begin, int64_t end, int64_t seq,
                                        int64_t heads, int64_t d, float* scratch) {
  const bf16* parts[3] = {dq, dk, dv};
  float *packed = scratch, *one = scratch + 3 * heads * d;
  for (int64_t row = begin; row < end; ++row) {
    const float* c = cos ? cos + row % seq * d : nullptr;
    const float* s = sin ? sin + row % seq * d : nullptr;
    for (int part = 0; part < 3; ++part)
      for (int64_t h = 0; h < heads; ++h) {
        widen(parts[part] + head_offset(row, h, seq, heads, d), one, d);
        rotate_row<true>(one, packed + (part * heads + h) * d, part < 2 ? c : nullptr, s, d);
      }
    narrow(packed, dqkv + row * 3 * heads * d, 3 * heads * d);
  }
}

// Runs the forward (qkv read, q k v written) or the backward (q k v read, qkv written).
void run_heads(bool backward, const at::Tensor& qkv, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
               const at::Tensor& cos, const at::Tensor& sin, int64_t heads) {
  const int64_t batch = qkv.size(0), seq = qkv.size(1), d = qkv.size(2) / (3 * heads);
  const float* cp = cos.numel() > 0 ? cos.data_ptr<float>() : nullptr;  // no elements: no rotation
  const float* sp = sin.numel() > 0 ? sin.data_ptr<float>() : nullptr;
  const bool is_float = qkv.scalar_type() == at::kFloat;
  at::parallel_for(
      0, batch * seq, grain(3 * heads * d),
      [&](int64_t begin, int64_t end) {
        std::vector<float> scratch(is_float ? 0 : static_cast<size_t>(3 * heads * d + d));
        if (is_float && backward)
          heads_backward_f32(qkv.data_ptr<float>(), q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(), cp,
                             sp, begin, end, seq, heads, d, nullptr);
        else if (is_float)
          heads_forward_f32(qkv.data_ptr<float>(), q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(), cp, sp,
                            begin, end, seq, heads, d, nullptr);
        else if (backward)
          heads_backward_bf16(static_cast<bf16*>(qkv.data_ptr()), static_cast<const bf16*>(q.data_ptr()),
                              static_cast<const bf16*>(k.data_ptr()), static_cast<const bf16*>(v.data_ptr()), cp, sp,
                              begin, end, seq, heads, d, scratch.data());
        else
          heads_forward_bf16(static_cast<const bf16*>(qkv.data_ptr()), static_cast<bf16*>(q.data_ptr()),
                             static_cast<bf16*>(k.data_ptr()), static_cast<bf16*>(v.data_ptr()), cp, sp, begin, end, seq,
                             heads, d, scratch.data());
      });
}

struct SplitHeadsRotary : public torch::autograd::Function<SplitHeadsRotary> {
  static variable_list forward(AutogradContext* ctx, const at::Tensor& qkv, int64_t heads, const at::Tensor& cos,
                               const at::Tensor& sin) {
    const int64_t batch = qkv.size(0), seq = qkv.size(1), d = qkv.size(2) / (3 * heads);
    const auto options = qkv.options();
    at::Tensor q = at::empty({batch, heads, seq, d}, options), k = at::empty_like(q), v = at::empty_like(q);
    run_heads(false, qkv, q, k, v, cos, sin, heads);
    ctx->save_for_backward({cos, sin});
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["qkv_sizes"] = qkv.sizes().vec();
    return {q, k, v};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const int64_t heads = ctx->saved_data["heads"].toInt();
    const std::vector<int64_t> sizes = ctx->saved_data["qkv_sizes"].toIntVector();
    // A part with no gradient (an output unused) contributes zeros.
    at::Tensor some;
    for (const at::Tensor& g : grads)
      if (g.defined()) some = g;
    std::array<at::Tensor, 3> g;
    for (size_t i = 0; i < 3; ++i)
      g[i] = grads[i].defined() ? grads[i].to(some.scalar_type()).contiguous() : at::zeros_like(some);
    at::Tensor dqkv = at::empty(sizes, some.options());
    run_heads(true, dqkv, g[0], g[1], g[2], saved[0], saved[1], heads);
    return {dqkv, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

at::Tensor rotate_half(const at::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return at::cat({-x.narrow(-1, half, x.size(-1) - half), x.narrow(-1, 0, half)}, -1);
}

at::Tensor apply_rotary_in_aten_ops(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  const at::Tensor xc = x.to(cos.scalar_type());
  return (xc * cos.unsqueeze(-2) + rotate_half(xc) * sin.unsqueeze(-2)).to(x.scalar_type());
}

bool grad_wanted(std::initializer_list<at::Tensor> inputs) {
  if (!at::GradMode::is_enabled()) return false;
  for (const at::Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

}  // namespace

bool fused_ops_apply(const at::Tensor& t) {
  return t.defined() && t.device().is_cpu() && t.layout() == at::kStrided && t.dim() >= 1 && t.numel() > 0 &&
         (t.scalar_type() == at::kFloat || t.scalar_type() == at::kBFloat16);
}

// Each entry point is a profiler range of its own, as ATen's operators are, so that a profile
// (MLH_PROFILE_DIR) shows the fused kernels' forward time rather than a gap between operators.
at::Tensor add_rms_norm(const at::Tensor& x, const at::Tensor& residual, double eps) {
  RECORD_FUNCTION("mlh::add_rms_norm", std::vector<c10::IValue>({x}));
  at::Tensor a = x, b = residual;
  if (b.defined() && b.scalar_type() != a.scalar_type()) {  // e.g. a float residual stream plus a bf16 output
    const auto common = at::promote_types(a.scalar_type(), b.scalar_type());
    a = a.to(common);
    b = b.to(common);
  }
  if (!fused_ops_apply(a) || (b.defined() && (b.sizes() != a.sizes() || !fused_ops_apply(b))))
    return rms_norm_in_aten_ops(b.defined() ? a + b : a, eps);
  a = a.contiguous();
  if (b.defined()) b = b.contiguous();
  if (grad_wanted({a, b})) return b.defined() ? AddRmsNorm::apply(a, b, eps) : RmsNorm::apply(a, eps);
  return rms_forward(a, b, eps, nullptr, nullptr);
}

at::Tensor silu_mul(const at::Tensor& gate_up) {
  RECORD_FUNCTION("mlh::silu_mul", std::vector<c10::IValue>({gate_up}));
  const int64_t n = gate_up.size(-1) / 2;
  if (gate_up.size(-1) % 2 != 0 || !fused_ops_apply(gate_up))
    return at::silu(gate_up.narrow(-1, 0, n)) * gate_up.narrow(-1, n, gate_up.size(-1) - n);
  const at::Tensor gu = gate_up.contiguous();
  if (grad_wanted({gu})) return SiluMul::apply(gu);
  return silu_mul_forward(gu);
}

std::array<at::Tensor, 3> split_heads_rotary(const at::Tensor& qkv, int64_t heads, const at::Tensor& cos,
                                             const at::Tensor& sin) {
  RECORD_FUNCTION("mlh::split_heads_rotary", std::vector<c10::IValue>({qkv}));
  TORCH_CHECK(qkv.dim() == 3 && qkv.size(2) % (3 * heads) == 0, "split_heads_rotary: qkv is ", qkv.sizes(),
              ", want [batch, seq, 3 * ", heads, " * head_dim]");
  const int64_t b = qkv.size(0), s = qkv.size(1), d = qkv.size(2) / (3 * heads);
  const bool rotary = cos.defined();
  const bool tables_fit = !rotary || (cos.dim() == 2 && cos.size(0) == s && cos.size(1) == d && d % 2 == 0 &&
                                      sin.sizes() == cos.sizes() && cos.device() == qkv.device());
  if (fused_ops_apply(qkv) && qkv.is_contiguous() && tables_fit) {
    // No tables as empty ones: an autograd function takes no undefined tensor as an input.
    const at::Tensor none = at::empty({0}, qkv.options().dtype(at::kFloat));
    const at::Tensor c = rotary ? cos.to(at::kFloat).contiguous() : none;
    const at::Tensor sn = rotary ? sin.to(at::kFloat).contiguous() : none;
    if (grad_wanted({qkv})) {
      const variable_list out = SplitHeadsRotary::apply(qkv, heads, c, sn);
      return {out[0], out[1], out[2]};
    }
    at::Tensor q = at::empty({b, heads, s, d}, qkv.options()), k = at::empty_like(q), v = at::empty_like(q);
    run_heads(false, qkv, q, k, v, c, sn, heads);
    return {q, k, v};
  }
  const at::Tensor parts = qkv.view({b, s, 3 * heads, d});
  at::Tensor q = parts.narrow(2, 0, heads), k = parts.narrow(2, heads, heads), v = parts.narrow(2, 2 * heads, heads);
  if (rotary) {
    q = apply_rotary_in_aten_ops(q, cos, sin);
    k = apply_rotary_in_aten_ops(k, cos, sin);
  }
  return {q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)};
}

}  // namespace mlh::rt
