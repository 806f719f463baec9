// Attention for short sequences on a CPU in float32 (see fused_attention.hpp).
//
// Each (batch, head) pair is one task: its q, k and v ([seq, head_dim], a few KiB each) and its
// [seq, seq] scores stay in the core's L1 and L2 caches from the first product to the last. The
// products are small matrix multiplications written for GCC to vectorize (a block of 4 rows by
// 32 columns of the result held in registers while the inner dimension streams past), and the
// softmax works on whole vectors of a row, all compiled once per instruction set
// (cpu_kernel_support.hpp). The operands are first copied into scratch whose rows are padded
// with zeros to a multiple of 16 floats, so that every loop runs on whole vectors; where
// head_dim is a multiple of 16 already, v and the output's gradient are read where they lie and
// the gradients' products write dq, dk and dv in place.
//
// The backward recomputes the probabilities from the saved log-sum-exp of each row (as flash
// attention does), so the forward keeps [seq] floats per head rather than [seq, seq].
//
// attention_from_qkv does the same work per head, a task per batch element: it first copies the
// element's q (rotated), k (rotated) and v out of the qkv projection's rows into scratch, and
// writes each head's output rows into the merged [seq, heads * head_dim] layout; its backward
// rotates q and k again from the saved projection (a few operations a value, where keeping
// them would write and read them through memory) and writes qkv's gradient row by row, dq and
// dk rotated back.
#include "mlh/runtime/fused_attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/autograd.h>

#include "mlh/runtime/compat.hpp"
#include "mlh/runtime/cpu_kernel_support.hpp"
#include "mlh/runtime/fused_ops.hpp"

namespace mlh::rt {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr int64_t kLane = 16;  // scratch rows are padded to a multiple of this many floats

int64_t padded(int64_t n) { return (n + kLane - 1) / kLane * kLane; }

// Sixteen floats as one value: GCC's vector extension, one AVX-512 register, two AVX2 ones or
// four SSE ones depending on the clone. Loops over scalars left the accumulators below in
// memory (GCC vectorized the innermost loop alone); as vectors they stay in registers.
typedef float Vec16 __attribute__((vector_size(64)));

// An unaligned load. (Filled through a reference: a Vec16 returned by value draws GCC's
// warning that the baseline clone passes it differently, irrelevant to an inlined function.)
MLH_CPU_INLINE void load16(Vec16& v, const float* p) { std::memcpy(&v, p, sizeof v); }

// c[r, 0:kCols] = sum over p < k of a[r, p] * b[p, 0:kCols], for kRows rows: the accumulators
// (kRows x kCols floats, 8 AVX-512 registers at 4 x 32) stay in registers for the whole sum.
// With kTransposedA, a is read as stored transposed ([k, m], lda apart), which spares the
// backward two [seq, seq] transposes.
template <int kRows, int kCols, bool kTransposedA>
MLH_CPU_INLINE void product_block(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                                  int64_t k) {
  constexpr int kVecs = kCols / 16;
  Vec16 acc[kRows][kVecs] = {};
  for (int64_t p = 0; p < k; ++p) {
    Vec16 bp[kVecs];
#pragma GCC unroll 4
    for (int j = 0; j < kVecs; ++j) load16(bp[j], b + p * ldb + 16 * j);
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
      const float ar = kTransposedA ? a[p * lda + r] : a[r * lda + p];
#pragma GCC unroll 4
      for (int j = 0; j < kVecs; ++j) acc[r][j] += ar * bp[j];
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int j = 0; j < kVecs; ++j) std::memcpy(c + r * ldc + 16 * j, &acc[r][j], sizeof(Vec16));
}

template <int kCols, bool kTransposedA>
MLH_CPU_INLINE void product_columns(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                                    int64_t m, int64_t k) {
  const int64_t row_step = kTransposedA ? 1 : lda;
  int64_t r = 0;
  for (; r + 4 <= m; r += 4) product_block<4, kCols, kTransposedA>(a + r * row_step, lda, b, ldb, c + r * ldc, ldc, k);
  for (; r < m; ++r) product_block<1, kCols, kTransposedA>(a + r * row_step, lda, b, ldb, c + r * ldc, ldc, k);
}

// c [m, n] = a [m, k] b [k, n] (a^T b with kTransposedA, a stored [k, m]), all row-major; n a
// multiple of kLane, b and c at least n wide.
template <bool kTransposedA = false>
MLH_CPU_INLINE void product(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, int64_t m,
                            int64_t n, int64_t k) {
  int64_t j = 0;
  for (; j + 32 <= n; j += 32) product_columns<32, kTransposedA>(a, lda, b + j, ldb, c + j, ldc, m, k);
  if (j < n) product_columns<16, kTransposedA>(a, lda, b + j, ldb, c + j, ldc, m, k);
}

// dst [rows, ld_dst] = src [rows, cols] (rows ld_src apart) * factor, the columns from cols to
// ld_dst zeroed.
MLH_CPU_INLINE void copy_padded(const float* src, int64_t ld_src, int64_t rows, int64_t cols, float factor, float* dst,
                                int64_t ld_dst) {
  if (cols == ld_dst && cols % kLane == 0) {  // whole vectors, nothing to pad (head_dim 32, 64, ...)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; j += kLane) {
        Vec16 v;
        load16(v, src + i * ld_src + j);
        v *= factor;
        std::memcpy(dst + i * ld_dst + j, &v, sizeof v);
      }
    return;
  }
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) dst[i * ld_dst + j] = src[i * ld_src + j] * factor;
    for (int64_t j = cols; j < ld_dst; ++j) dst[i * ld_dst + j] = 0.0f;
  }
}

// dst [cols, ld_dst] = src [rows, cols] transposed (src's rows ld_src apart), zero past `rows`.
MLH_CPU_INLINE void transpose_padded(const float* src, int64_t ld_src, int64_t rows, int64_t cols, float* dst,
                                     int64_t ld_dst) {
  for (int64_t j = 0; j < cols; ++j) {
    for (int64_t i = 0; i < rows; ++i) dst[j * ld_dst + i] = src[i * ld_src + j];
    for (int64_t i = rows; i < ld_dst; ++i) dst[j * ld_dst + i] = 0.0f;
  }
}

// The columns of row i that attend: all s, or the first i + 1 when causal.
MLH_CPU_INLINE int64_t attended(int64_t i, int64_t s, bool causal) { return causal ? i + 1 : s; }

typedef int32_t Vec16i __attribute__((vector_size(64)));

// The sum and the maximum of a vector's 16 lanes, folded in halves (8 + 8, 4 + 4, ...): four
// dependent steps where adding lane after lane takes sixteen, once per row of scores.
MLH_CPU_INLINE float lanes_sum(const Vec16& lanes) {
  Vec16 v = lanes;
  v += __builtin_shuffle(v, Vec16i{8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7});
  v += __builtin_shuffle(v, Vec16i{4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11});
  v += __builtin_shuffle(v, Vec16i{2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13});
  v += __builtin_shuffle(v, Vec16i{1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14});
  return v[0];
}

MLH_CPU_INLINE float lanes_max(const Vec16& lanes) {
  Vec16 v = lanes;
  Vec16 t = __builtin_shuffle(v, Vec16i{8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7});
  v = v > t ? v : t;
  t = __builtin_shuffle(v, Vec16i{4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11});
  v = v > t ? v : t;
  t = __builtin_shuffle(v, Vec16i{2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13});
  v = v > t ? v : t;
  t = __builtin_shuffle(v, Vec16i{1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14});
  v = v > t ? v : t;
  return v[0];
}

// exp(x) in 16 lanes for x <= 0 (softmax's arguments once shifted by the row's maximum or its
// log-sum-exp), on vectors so that it fuses with the row's sum in one loop.
MLH_CPU_INLINE void exp_nonpositive(Vec16& x) {
  Vec16 floor = {};
  floor += -87.33654f;
  x = x < floor ? floor : x;
  cpu::exp_in_range<Vec16, Vec16i>(x);
}

// x . y in 16 lanes, then across them in a fixed order (the backward's rowsum of g * o over
// head_dim, any length).
MLH_CPU_INLINE float dot_of(const float* x, const float* y, int64_t n) {
  float lanes[16] = {};
  int64_t j = 0;
  for (; j + 16 <= n; j += 16)
    for (int l = 0; l < 16; ++l) lanes[l] += x[j + l] * y[j + l];
  for (int l = 0; j < n; ++j, ++l) lanes[l] += x[j] * y[j];
  float total = 0.0f;
  for (int l = 0; l < 16; ++l) total += lanes[l];
  return total;
}

struct Shape {
  int64_t s, d, sp, dp;  // sequence, head_dim, and both padded to kLane
  float scale;
  bool causal;
};

// Scratch per thread, in floats (the backward's, the larger): four [s, dp] operands, k and v
// transposed, the probabilities and their gradient; the forward's row sums fit in the rest.
int64_t scratch_floats(const Shape& sh) { return 4 * sh.s * sh.dp + 2 * sh.dp * sh.sp + 2 * sh.s * sh.sp; }

// probs [s, sp] = exp(q k^T * scale - shift) for one head, from qs (q * scale, [s, dp]) and kt
// (k^T, [dp, sp]); masked and padded columns 0. In the forward (lse_in null) the shift is the
// row's maximum and the rows are left unnormalized: 1 / each row's sum goes to inv_sum_out (the
// forward scales the output's row by it, d floats where normalizing would take s) and, with
// lse_out, its log-sum-exp. In the backward the shift is the saved log-sum-exp, which makes
// the rows the probabilities.
MLH_CPU_INLINE void probabilities(const Shape& sh, const float* qs, const float* kt, float* probs, float* inv_sum_out,
                                  float* lse_out, const float* lse_in) {
  product(qs, sh.dp, kt, sh.sp, probs, sh.sp, sh.s, sh.sp, sh.d);
  const Vec16i lane_index = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  Vec16 none = {}, zero = {};
  none -= std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < sh.s; ++i) {
    // Whole rows of sp (a multiple of 16), in vectors: the columns that do not attend (the
    // padding, the future when causal) are masked out of the maximum and set to 0 after the exp.
    float* row = probs + i * sh.sp;
    const auto n = static_cast<int32_t>(attended(i, sh.s, sh.causal));
    float shift;
    if (lse_in) {
      shift = lse_in[i];
    } else {
      Vec16 top = none, v;
      for (int64_t j = 0; j < sh.sp; j += 16) {
        load16(v, row + j);
        v = lane_index + static_cast<int32_t>(j) < n ? v : none;
        top = v > top ? v : top;
      }
      shift = lanes_max(top);
    }
    Vec16 lanes = {};
    for (int64_t j = 0; j < sh.sp; j += 16) {
      Vec16 v;
      load16(v, row + j);
      v -= shift;
      exp_nonpositive(v);
      v = lane_index + static_cast<int32_t>(j) < n ? v : zero;
      std::memcpy(row + j, &v, sizeof v);
      lanes += v;
    }
    if (lse_in) continue;
    const float sum = lanes_sum(lanes);
    inv_sum_out[i] = 1.0f / sum;
    if (lse_out) lse_out[i] = shift + std::log(sum);
  }
}

// One head: q, k, v [s, d] -> out (rows ld_out apart) and lse [s] (may be null).
MLH_CPU_INLINE void forward_head(const float* q, const float* k, const float* v, float* out, int64_t ld_out,
                                 float* lse, const Shape& sh, float* scratch) {
  float* qs = scratch;                // [s, dp]
  float* vp = qs + sh.s * sh.dp;      // [s, dp]
  float* op = vp + sh.s * sh.dp;      // [s, dp]
  float* kt = op + sh.s * sh.dp;      // [dp, sp]
  float* probs = kt + sh.dp * sh.sp;  // [s, sp]
  float* inv_sum = probs + sh.s * sh.sp;  // [s]
  copy_padded(q, sh.d, sh.s, sh.d, sh.scale, qs, sh.dp);
  transpose_padded(k, sh.d, sh.s, sh.d, kt, sh.sp);
  probabilities(sh, qs, kt, probs, inv_sum, lse, nullptr);
  const bool unpadded = sh.d == sh.dp;  // v's rows are whole vectors already: read in place
  if (!unpadded) copy_padded(v, sh.d, sh.s, sh.d, 1.0f, vp, sh.dp);
  product(probs, sh.sp, unpadded ? v : vp, sh.dp, op, sh.dp, sh.s, sh.dp, sh.s);
  for (int64_t i = 0; i < sh.s; ++i) copy_padded(op + i * sh.dp, sh.dp, 1, sh.d, inv_sum[i], out + i * ld_out, sh.d);
}

// One head's gradients dq, dk, dv [s, d] from q, k, v [s, d], the output o and its gradient g
// (rows ld_o and ld_g apart) and the forward's lse.
MLH_CPU_INLINE void backward_head(const float* q, const float* k, const float* v, const float* o, int64_t ld_o,
                                  const float* g, int64_t ld_g, const float* lse, float* dq, float* dk, float* dv,
                                  const Shape& sh, float* scratch) {
  float* qs = scratch;                // q * scale [s, dp]
  float* ks = qs + sh.s * sh.dp;      // k * scale [s, dp]
  float* gp = ks + sh.s * sh.dp;      // g [s, dp]
  float* grad = gp + sh.s * sh.dp;    // dq, dk or dv before they are copied out [s, dp]
  float* kt = grad + sh.s * sh.dp;    // k^T [dp, sp]
  float* vt = kt + sh.dp * sh.sp;     // v^T [dp, sp]
  float* probs = vt + sh.dp * sh.sp;  // [s, sp]
  float* dscores = probs + sh.s * sh.sp;  // [s, sp]
  // Where rows are whole vectors (d == dp), g is read in place and the products write dq, dk
  // and dv themselves; otherwise through padded scratch.
  const bool unpadded = sh.d == sh.dp;
  const float* g_rows = unpadded ? g : gp;
  const int64_t ld_g_rows = unpadded ? ld_g : sh.dp;
  auto product_into = [&](float* dst, auto multiply) {
    multiply(unpadded ? dst : grad, unpadded ? sh.d : sh.dp);
    if (!unpadded)
      for (int64_t i = 0; i < sh.s; ++i)
        for (int64_t j = 0; j < sh.d; ++j) dst[i * sh.d + j] = grad[i * sh.dp + j];
  };
  copy_padded(q, sh.d, sh.s, sh.d, sh.scale, qs, sh.dp);
  copy_padded(k, sh.d, sh.s, sh.d, sh.scale, ks, sh.dp);
  if (!unpadded) copy_padded(g, ld_g, sh.s, sh.d, 1.0f, gp, sh.dp);
  transpose_padded(k, sh.d, sh.s, sh.d, kt, sh.sp);
  transpose_padded(v, sh.d, sh.s, sh.d, vt, sh.sp);
  probabilities(sh, qs, kt, probs, nullptr, nullptr, lse);
  // dP = g v^T; dS = P (dP - rowsum(g o)): the softmax's backward, 0 where P is.
  product(g_rows, ld_g_rows, vt, sh.sp, dscores, sh.sp, sh.s, sh.sp, sh.d);
  for (int64_t i = 0; i < sh.s; ++i) {
    const float dot = dot_of(g + i * ld_g, o + i * ld_o, sh.d);
    float* ds = dscores + i * sh.sp;
    const float* p = probs + i * sh.sp;
    for (int64_t j = 0; j < sh.sp; ++j) ds[j] = p[j] * (ds[j] - dot);
  }
  // dq = dS k * scale; dk = dS^T q * scale; dv = P^T g.
  product_into(dq, [&](float* c, int64_t ldc) { product(dscores, sh.sp, ks, sh.dp, c, ldc, sh.s, sh.dp, sh.s); });
  product_into(dk, [&](float* c, int64_t ldc) { product<true>(dscores, sh.sp, qs, sh.dp, c, ldc, sh.s, sh.dp, sh.s); });
  product_into(dv, [&](float* c, int64_t ldc) {
    product<true>(probs, sh.sp, g_rows, ld_g_rows, c, ldc, sh.s, sh.dp, sh.s);
  });
}

// Heads [begin, end) of q, k, v [heads, s, d] -> out [heads, s, d] and lse [heads, s] (may be null).
MLH_CPU_CLONES void attention_forward_f32(const float* q, const float* k, const float* v, float* out, float* lse,
                                          const Shape sh, int64_t begin, int64_t end, float* scratch) {
  const int64_t head = sh.s * sh.d;
  for (int64_t h = begin; h < end; ++h)
    forward_head(q + h * head, k + h * head, v + h * head, out + h * head, sh.d, lse ? lse + h * sh.s : nullptr, sh,
                 scratch);
}

// The gradients of heads [begin, end): dq, dk, dv [heads, s, d] from the output's gradient g,
// the output o and the forward's lse.
MLH_CPU_CLONES void attention_backward_f32(const float* q, const float* k, const float* v, const float* o,
                                           const float* g, const float* lse, float* dq, float* dk, float* dv,
                                           const Shape sh, int64_t begin, int64_t end, float* scratch) {
  const int64_t head = sh.s * sh.d;
  for (int64_t h = begin; h < end; ++h)
    backward_head(q + h * head, k + h * head, v + h * head, o + h * head, sh.d, g + h * head, sh.d, lse + h * sh.s,
                  dq + h * head, dk + h * head, dv + h * head, sh, scratch);
}

// ---- From a qkv projection: qkv [B, s, 3, H, d] in, out [B, s, H, d] ----
//
// A task is a batch element, all its heads: its rows of qkv are read, and those of the output
// and of qkv's gradient written, in order, one row after another (by heads, the rows would be
// read and written in slices of d floats, a row of the projection apart). Each head's work is
// the same as above, so the grouping changes no result.

// Scratch per thread, in floats: a head's (scratch_floats), then the batch element's q, k, v
// and (backward) their gradients, [heads, s, d] each.
int64_t qkv_scratch_floats(const Shape& sh, int64_t heads) { return scratch_floats(sh) + 6 * heads * sh.s * sh.d; }

struct QkvHeads {
  int64_t heads;
  const float* cos;  // rotary tables [s, d]; null: no rotation
  const float* sin;
};

// Batch element b's q and k rotated, and v, into [heads, s, d] each, as split_heads_rotary
// writes them.
MLH_CPU_INLINE void gather_batch(const float* qkv, const QkvHeads& layout, const Shape& sh, int64_t b, float* q,
                                 float* k, float* v) {
  const int64_t heads = layout.heads, width = heads * sh.d;
  for (int64_t i = 0; i < sh.s; ++i) {
    const float* row = qkv + (b * sh.s + i) * 3 * width;
    const float* c = layout.cos ? layout.cos + i * sh.d : nullptr;
    const float* s = layout.sin ? layout.sin + i * sh.d : nullptr;
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t to = (h * sh.s + i) * sh.d;
      cpu::rotate_row<false>(row + h * sh.d, q + to, c, s, sh.d);
      cpu::rotate_row<false>(row + width + h * sh.d, k + to, c, s, sh.d);
      cpu::rotate_row<false>(row + 2 * width + h * sh.d, v + to, nullptr, nullptr, sh.d);
    }
  }
}

// Batch elements [begin, end) of qkv -> out [B, s, heads * d] and lse [B * heads, s] (may be null).
MLH_CPU_CLONES void qkv_attention_forward_f32(const float* qkv, const QkvHeads layout, float* out, float* lse,
                                              const Shape sh, int64_t begin, int64_t end, float* scratch) {
  const int64_t heads = layout.heads, head = sh.s * sh.d;
  float* q = scratch + scratch_floats(sh);
  float *k = q + heads * head, *v = k + heads * head;
  for (int64_t b = begin; b < end; ++b) {
    gather_batch(qkv, layout, sh, b, q, k, v);
    for (int64_t h = 0; h < heads; ++h)
      forward_head(q + h * head, k + h * head, v + h * head, out + (b * sh.s * heads + h) * sh.d, heads * sh.d,
                   lse ? lse + (b * heads + h) * sh.s : nullptr, sh, scratch);
  }
}

// The gradient of qkv for batch elements [begin, end) from the output's gradient g, the output
// o and lse: each head's dq and dk rotated back, as split_heads_rotary's backward does.
MLH_CPU_CLONES void qkv_attention_backward_f32(const float* qkv, const QkvHeads layout, const float* o, const float* g,
                                               const float* lse, float* dqkv, const Shape sh, int64_t begin,
                                               int64_t end, float* scratch) {
  const int64_t heads = layout.heads, head = sh.s * sh.d, width = heads * sh.d;
  float* q = scratch + scratch_floats(sh);
  float *k = q + heads * head, *v = k + heads * head;
  float *dq = v + heads * head, *dk = dq + heads * head, *dv = dk + heads * head;
  for (int64_t b = begin; b < end; ++b) {
    gather_batch(qkv, layout, sh, b, q, k, v);
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t merged = (b * sh.s * heads + h) * sh.d;
      backward_head(q + h * head, k + h * head, v + h * head, o + merged, width, g + merged, width,
                    lse + (b * heads + h) * sh.s, dq + h * head, dk + h * head, dv + h * head, sh, scratch);
    }
    for (int64_t i = 0; i < sh.s; ++i) {
      float* row = dqkv + (b * sh.s + i) * 3 * width;
      const float* c = layout.cos ? layout.cos + i * sh.d : nullptr;
      const float* s = layout.sin ? layout.sin + i * sh.d : nullptr;
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t from = (h * sh.s + i) * sh.d;
        cpu::rotate_row<true>(dq + from, row + h * sh.d, c, s, sh.d);
        cpu::rotate_row<true>(dk + from, row + width + h * sh.d, c, s, sh.d);
        cpu::rotate_row<true>(dv + from, row + 2 * width + h * sh.d, nullptr, nullptr, sh.d);
      }
    }
  }
}

Shape shape_of(int64_t seq, int64_t head_dim, bool causal) {
  Shape sh;
  sh.s = seq;
  sh.d = head_dim;
  sh.sp = padded(sh.s);
  sh.dp = padded(sh.d);
  sh.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(sh.d)));
  sh.causal = causal;
  return sh;
}

Shape shape_of(const at::Tensor& q, bool causal) { return shape_of(q.size(-2), q.size(-1), causal); }

int64_t heads_of(const at::Tensor& q) { return q.numel() / std::max<int64_t>(q.size(-2) * q.size(-1), 1); }

// body(begin, end, scratch) over chunks of heads on LibTorch's threads, each chunk with its own
// scratch. Each head is one thread's work from start to end, so results do not depend on the
// thread count.
void run_over_heads(int64_t heads, int64_t scratch_size, const std::function<void(int64_t, int64_t, float*)>& body) {
  at::parallel_for(0, heads, 1, [&](int64_t begin, int64_t end) {
    // The exp's floor (1.2e-38) times a value gives subnormals, each a microcode assist on
    // Intel; only results below float's smallest normal change.
    const cpu::DenormalsFlushed flushed;
    std::vector<float> scratch(static_cast<size_t>(scratch_size));
    body(begin, end, scratch.data());
  });
}

at::Tensor attention_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal,
                             at::Tensor* lse) {
  const Shape sh = shape_of(q, causal);
  at::Tensor out = at::empty_like(q);
  if (lse) *lse = at::empty({heads_of(q), sh.s}, q.options());
  float* lse_ptr = lse ? lse->data_ptr<float>() : nullptr;
  run_over_heads(heads_of(q), scratch_floats(sh), [&](int64_t begin, int64_t end, float* scratch) {
    attention_forward_f32(q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(), out.data_ptr<float>(), lse_ptr,
                          sh, begin, end, scratch);
  });
  return out;
}

struct ShortAttention : public torch::autograd::Function<ShortAttention> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            bool causal) {
    at::Tensor lse;
    at::Tensor out = attention_forward(q, k, v, causal, &lse);
    ctx->save_for_backward({q, k, v, out, lse});
    ctx->saved_data["causal"] = causal;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    RECORD_FUNCTION("mlh::short_attention_backward", std::vector<c10::IValue>());
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor &q = saved[0], &k = saved[1], &v = saved[2], &out = saved[3], &lse = saved[4];
    const at::Tensor g = grads[0].to(at::kFloat).contiguous();
    const Shape sh = shape_of(q, ctx->saved_data["causal"].toBool());
    at::Tensor dq = at::empty_like(q), dk = at::empty_like(k), dv = at::empty_like(v);
    run_over_heads(heads_of(q), scratch_floats(sh), [&](int64_t begin, int64_t end, float* scratch) {
      attention_backward_f32(q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(), out.data_ptr<float>(),
                             g.data_ptr<float>(), lse.data_ptr<float>(), dq.data_ptr<float>(), dk.data_ptr<float>(),
                             dv.data_ptr<float>(), sh, begin, end, scratch);
    });
    return {dq, dk, dv, at::Tensor()};
  }
};

// Shape of a qkv projection [B, s, 3 * heads * d]'s heads.
Shape qkv_shape(const at::Tensor& qkv, int64_t heads, bool causal) {
  return shape_of(qkv.size(1), qkv.size(2) / (3 * heads), causal);
}

// Tables without elements: no rotation.
QkvHeads qkv_heads(int64_t heads, const at::Tensor& cos, const at::Tensor& sin) {
  return {heads, cos.numel() > 0 ? cos.data_ptr<float>() : nullptr, sin.numel() > 0 ? sin.data_ptr<float>() : nullptr};
}

// out [B, s, heads * d] and, with lse, lse [B * heads, s].
at::Tensor qkv_attention_forward(const at::Tensor& qkv, int64_t heads, const at::Tensor& cos, const at::Tensor& sin,
                                 bool causal, at::Tensor* lse) {
  const Shape sh = qkv_shape(qkv, heads, causal);
  const int64_t tasks = qkv.size(0) * heads;
  at::Tensor out = at::empty({qkv.size(0), sh.s, heads * sh.d}, qkv.options());
  if (lse) *lse = at::empty({tasks, sh.s}, qkv.options());
  float* lse_ptr = lse ? lse->data_ptr<float>() : nullptr;
  const QkvHeads layout = qkv_heads(heads, cos, sin);
  run_over_heads(qkv.size(0), qkv_scratch_floats(sh, heads), [&](int64_t begin, int64_t end, float* scratch) {
    qkv_attention_forward_f32(qkv.data_ptr<float>(), layout, out.data_ptr<float>(), lse_ptr, sh, begin, end, scratch);
  });
  return out;
}

struct QkvAttention : public torch::autograd::Function<QkvAttention> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& qkv, int64_t heads, const at::Tensor& cos,
                            const at::Tensor& sin, bool causal) {
    at::Tensor lse;
    at::Tensor out = qkv_attention_forward(qkv, heads, cos, sin, causal, &lse);
    ctx->save_for_backward({qkv, cos, sin, out, lse});
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["causal"] = causal;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    RECORD_FUNCTION("mlh::attention_from_qkv_backward", std::vector<c10::IValue>());
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor &qkv = saved[0], &cos = saved[1], &sin = saved[2], &out = saved[3], &lse = saved[4];
    const int64_t heads = ctx->saved_data["heads"].toInt();
    const Shape sh = qkv_shape(qkv, heads, ctx->saved_data["causal"].toBool());
    const at::Tensor g = grads[0].to(at::kFloat).contiguous();
    at::Tensor dqkv = at::empty_like(qkv);
    const QkvHeads layout = qkv_heads(heads, cos, sin);
    run_over_heads(qkv.size(0), qkv_scratch_floats(sh, heads), [&](int64_t begin, int64_t end, float* scratch) {
      qkv_attention_backward_f32(qkv.data_ptr<float>(), layout, out.data_ptr<float>(), g.data_ptr<float>(),
                                 lse.data_ptr<float>(), dqkv.data_ptr<float>(), sh, begin, end, scratch);
    });
    return {dqkv, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

bool grad_wanted(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  return at::GradMode::is_enabled() && (q.requires_grad() || k.requires_grad() || v.requires_grad());
}

}  // namespace

bool short_attention_applies(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  auto fits = [&](const at::Tensor& t) {
    return t.defined() && t.device().is_cpu() && t.layout() == at::kStrided && t.scalar_type() == at::kFloat &&
           t.dim() >= 2 && t.sizes() == q.sizes();
  };
  return fits(q) && fits(k) && fits(v) && q.numel() > 0 && q.size(-2) <= kShortAttentionMaxSequence;
}

at::Tensor short_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal) {
  RECORD_FUNCTION("mlh::short_attention", std::vector<c10::IValue>({q}));
  TORCH_CHECK(short_attention_applies(q, k, v), "short_attention: q, k and v must be float32 CPU tensors of one shape ",
              "with at most ", kShortAttentionMaxSequence, " positions; got ", q.sizes(), ", ", k.sizes(), ", ",
              v.sizes());
  const at::Tensor qc = q.contiguous(), kc = k.contiguous(), vc = v.contiguous();
  if (grad_wanted(q, k, v)) return ShortAttention::apply(qc, kc, vc, causal);
  return attention_forward(qc, kc, vc, causal, nullptr);
}

bool attention_from_qkv_applies(const at::Tensor& qkv, int64_t heads, const at::Tensor& cos, const at::Tensor& sin) {
  if (!qkv.defined() || !qkv.device().is_cpu() || qkv.layout() != at::kStrided || qkv.scalar_type() != at::kFloat ||
      qkv.dim() != 3 || heads <= 0 || qkv.size(2) == 0 || qkv.size(2) % (3 * heads) != 0 || qkv.size(1) == 0 ||
      qkv.size(1) > kShortAttentionMaxSequence)
    return false;
  if (!cos.defined()) return !sin.defined();
  const int64_t d = qkv.size(2) / (3 * heads);
  return cos.dim() == 2 && cos.size(0) == qkv.size(1) && cos.size(1) == d && d % 2 == 0 && sin.defined() &&
         sin.sizes() == cos.sizes() && cos.device().is_cpu() && sin.device().is_cpu();
}

at::Tensor attention_from_qkv(const at::Tensor& qkv, int64_t heads, const at::Tensor& cos, const at::Tensor& sin,
                              bool causal) {
  if (attention_from_qkv_applies(qkv, heads, cos, sin)) {
    RECORD_FUNCTION("mlh::attention_from_qkv", std::vector<c10::IValue>({qkv}));
    const at::Tensor x = qkv.contiguous();
    // No tables as empty ones: an autograd function takes no undefined tensor as an input.
    const at::Tensor none = at::empty({0}, x.options());
    const at::Tensor c = cos.defined() ? cos.to(at::kFloat).contiguous() : none;
    const at::Tensor s = sin.defined() ? sin.to(at::kFloat).contiguous() : none;
    if (at::GradMode::is_enabled() && x.requires_grad()) return QkvAttention::apply(x, heads, c, s, causal);
    return qkv_attention_forward(x, heads, c, s, causal, nullptr);
  }
  const auto [q, k, v] = split_heads_rotary(qkv, heads, cos, sin);
  return attention(q, k, v, causal).transpose(1, 2).reshape({qkv.size(0), qkv.size(1), -1});
}

at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal) {
  if (short_attention_applies(q, k, v)) return short_attention(q, k, v, causal);
  return compat::scaled_dot_product_attention(q, k, v, causal);
}

}  // namespace mlh::rt
