// Float32 matrix products for linear layers on an AVX-512 CPU (see cpu_linear.hpp).
//
// One routine, c = a b, serves the forward (x w^T) and both gradients (dy w, dy^T x):
//   - the right-hand side b is packed, kDepth rows by kWidth columns at a time, into panels
//     of 32 columns, each panel's rows consecutive, so the inner loop reads it as two vectors
//     a row; the threads share one packed copy;
//   - each thread takes whole blocks of 8 rows of c and, for each panel, keeps the 8 x 32
//     block of c in 16 AVX-512 registers while the depth streams past: per step two vector
//     loads of b, eight broadcasts of a, sixteen fused multiply-adds;
//   - a is read where it lies: row-major (x, dy) or transposed (dy^T for the weight's
//     gradient), 8 consecutive floats a step in the latter case.
// An element of c is summed over the depth in order, block after block, by whichever thread
// holds its row block: the thread count does not change it. The weight's gradient first splits
// its depth (the batch's rows) into parts by the shapes alone, each thread summing whole parts
// with b packed by itself, and adds the parts in order (weight_gradient, below).
#include "mlh/runtime/cpu_linear.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/autograd.h>

#include "mlh/runtime/compat.hpp"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MLH_HAS_AVX512_GEMM 1
#define MLH_AVX512 __attribute__((target("avx512f")))
#else
#define MLH_HAS_AVX512_GEMM 0
#define MLH_AVX512
#endif

namespace mlh::rt {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

#if MLH_HAS_AVX512_GEMM

constexpr int kRows = 8;      // rows of c held in registers
constexpr int kCols = 32;     // columns of c held in registers: two 16-float vectors
constexpr int64_t kDepth = 512;  // rows of b packed at a time: a panel (64 KiB) stays in L2
constexpr int64_t kWidth = 2048;  // columns of b packed at a time, a multiple of kCols

typedef float Vec16 __attribute__((vector_size(64)));

// How a is laid out: a(i, p) = a[i * lda + p], or with kTransposed a[p * lda + i]. All 32
// columns of c are written (or added to): the accumulators go straight from the registers to
// c. (A narrower last panel is written through a tile, in multiply_rows: copying the
// accumulators out column by column here made GCC keep them all on the stack, zeroed before
// the loop and stored and reloaded after it, on every call: 2-5% of a product 128 deep.)
template <int kBlockRows, bool kTransposed>
MLH_AVX512 void multiply_block(int64_t depth, const float* a, int64_t lda, const float* packed_b, float* c,
                               int64_t ldc, bool add_to_c) {
  Vec16 acc[kBlockRows][2];
  for (int r = 0; r < kBlockRows; ++r) acc[r][0] = acc[r][1] = Vec16{};  // `= {}` became a rep stos on the stack
  for (int64_t p = 0; p < depth; ++p) {
    Vec16 b0, b1;
    std::memcpy(&b0, packed_b, sizeof b0);
    std::memcpy(&b1, packed_b + 16, sizeof b1);
#pragma GCC unroll 8
    for (int r = 0; r < kBlockRows; ++r) {
      const float ar = kTransposed ? a[p * lda + r] : a[r * lda + p];
      acc[r][0] += ar * b0;
      acc[r][1] += ar * b1;
    }
    packed_b += kCols;
  }
#pragma GCC unroll 8
  for (int r = 0; r < kBlockRows; ++r)
#pragma GCC unroll 2
    for (int half = 0; half < 2; ++half) {
      float* out = c + r * ldc + 16 * half;
      Vec16 v = acc[r][half];
      if (add_to_c) {
        Vec16 old;
        std::memcpy(&old, out, sizeof old);
        v += old;
      }
      std::memcpy(out, &v, sizeof v);
    }
}

template <bool kTransposed>
MLH_AVX512 void multiply_rows(int64_t row_begin, int64_t row_end, int64_t n, int64_t depth, const float* a,
                              int64_t lda, const float* packed_b, float* c, int64_t ldc, bool add_to_c) {
  auto a_row = [&](int64_t i) { return kTransposed ? a + i : a + i * lda; };
  // Each panel of 32 columns of c for the rows from i: whole panels in place, the last one,
  // narrower, through a tile of 32 columns (its old values first where they are added to).
  auto each_panel = [&](int64_t i, int rows, auto block) {
    for (int64_t j = 0; j < n; j += kCols) {
      const int64_t cols = std::min<int64_t>(kCols, n - j);
      float* cij = c + i * ldc + j;
      if (cols == kCols) {
        block(a_row(i), packed_b + j * depth, cij, ldc);
        continue;
      }
      alignas(64) float tile[kRows * kCols] = {};
      if (add_to_c)
        for (int r = 0; r < rows; ++r) std::memcpy(tile + r * kCols, cij + r * ldc, cols * sizeof(float));
      block(a_row(i), packed_b + j * depth, tile, kCols);
      for (int r = 0; r < rows; ++r) std::memcpy(cij + r * ldc, tile + r * kCols, cols * sizeof(float));
    }
  };
  int64_t i = row_begin;
  for (; i + kRows <= row_end; i += kRows)
    each_panel(i, kRows, [&](const float* ai, const float* bj, float* cij, int64_t ld) {
      multiply_block<kRows, kTransposed>(depth, ai, lda, bj, cij, ld, add_to_c);
    });
  for (; i < row_end; ++i)  // the rows past the last whole block: always the last thread's
    each_panel(i, 1, [&](const float* ai, const float* bj, float* cij, int64_t ld) {
      multiply_block<1, kTransposed>(depth, ai, lda, bj, cij, ld, add_to_c);
    });
}

// Rows [p0, p0 + depth) of b, where b(p, j) = b[p * b_row + j * b_col], as panels of 32
// columns ([depth, 32] each, zero-padded past n): here rows [begin, end) of that block, packed
// by the calling thread.
void pack_b_rows(const float* b, int64_t b_row, int64_t b_col, int64_t n, int64_t p0, int64_t depth, float* packed,
                 int64_t begin, int64_t end) {
  const int64_t panels = (n + kCols - 1) / kCols;
  for (int64_t panel = 0; panel < panels; ++panel) {
    const int64_t j0 = panel * kCols, cols = std::min<int64_t>(kCols, n - j0);
    float* dst = packed + j0 * depth;
    for (int64_t p = begin; p < end; ++p) {
      const float* src = b + (p0 + p) * b_row + j0 * b_col;
      float* row = dst + p * kCols;
      if (b_col == 1) {
        std::memcpy(row, src, cols * sizeof(float));
      } else {  // the weight read transposed
        for (int64_t j = 0; j < cols; ++j) row[j] = src[j * b_col];
      }
      std::fill(row + cols, row + kCols, 0.f);
    }
  }
}

// The whole block, the threads splitting its rows.
void pack_b(const float* b, int64_t b_row, int64_t b_col, int64_t n, int64_t p0, int64_t depth, float* packed) {
  at::parallel_for(0, depth, std::max<int64_t>(16, 8192 / std::max<int64_t>(n, 1)), [&](int64_t begin, int64_t end) {
    pack_b_rows(b, b_row, b_col, n, p0, depth, packed, begin, end);
  });
}

// A packing buffer of at least `floats` floats, kept by the calling thread between calls, on a
// 64-byte boundary so that no vector load of b straddles two cache lines (malloc's large blocks
// start 16 bytes past one). `slot` tells the callers' buffers apart.
float* thread_buffer(int slot, int64_t floats) {
  thread_local std::vector<float> buffers[2];
  std::vector<float>& buffer = buffers[slot];
  buffer.resize(static_cast<size_t>(floats + 16));
  float* p = buffer.data();
  return p + (64 - reinterpret_cast<uintptr_t>(p) % 64) % 64 / sizeof(float);
}

int64_t packed_floats(int64_t n, int64_t k) {
  return std::min(k, kDepth) * std::min((n + kCols - 1) / kCols * kCols, kWidth);
}

// c [m, n] = a b over the depth k: a row-major [m, k] (lda apart) or, with transposed_a,
// stored [k, m]; b(p, j) = b[p * b_row + j * b_col]; c row-major, ldc apart.
void gemm(bool transposed_a, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
          int64_t b_row, int64_t b_col, float* c, int64_t ldc) {
  // The packed block (at most kDepth x kWidth floats, 4 MiB) is kept by the calling thread
  // between calls: a step calls this a hundred times with the same few sizes.
  float* packed_b = thread_buffer(0, packed_floats(n, k));
  const int64_t row_blocks = (m + kRows - 1) / kRows;
  for (int64_t j0 = 0; j0 < n; j0 += kWidth) {
    const int64_t width = std::min(kWidth, n - j0);
    for (int64_t p0 = 0; p0 < k; p0 += kDepth) {
      const int64_t depth = std::min(kDepth, k - p0);
      pack_b(b + j0 * b_col, b_row, b_col, width, p0, depth, packed_b);
      const float* a_block = transposed_a ? a + p0 * lda : a + p0;
      at::parallel_for(0, row_blocks, 1, [&](int64_t begin, int64_t end) {
        const int64_t rows_begin = begin * kRows, rows_end = std::min(m, end * kRows);
        if (transposed_a)
          multiply_rows<true>(rows_begin, rows_end, width, depth, a_block, lda, packed_b, c + j0, ldc, p0 > 0);
        else
          multiply_rows<false>(rows_begin, rows_end, width, depth, a_block, lda, packed_b, c + j0, ldc, p0 > 0);
      });
    }
  }
}

// Rows [row_begin, row_end) of c [m, n] = a^T b over the depth k (a stored [k, m], lda apart;
// b row-major [k, n]) by the calling thread alone, which packs b into a buffer of its own.
void multiply_rows_alone(int64_t row_begin, int64_t row_end, int64_t n, int64_t k, const float* a, int64_t lda,
                         const float* b, float* c, int64_t ldc) {
  float* packed_b = thread_buffer(1, packed_floats(n, k));
  for (int64_t j0 = 0; j0 < n; j0 += kWidth) {
    const int64_t width = std::min(kWidth, n - j0);
    for (int64_t p0 = 0; p0 < k; p0 += kDepth) {
      const int64_t depth = std::min(kDepth, k - p0);
      pack_b_rows(b + j0, n, 1, width, p0, depth, packed_b, 0, depth);
      multiply_rows<true>(row_begin, row_end, width, depth, a + p0 * lda, lda, packed_b, c + j0, ldc, p0 > 0);
    }
  }
}

// How many parts the weight's gradient splits its depth (the batch's rows) into: by the shapes
// alone, so that the thread count does not change the sum; a power of two, so that two or four
// threads each get whole parts; each at least kPartRows deep; and the parts' sums past the
// first, which the calling thread keeps between calls, at most kPartSumFloats (32 MiB): a
// weight too large for that is one part, where the product's own work dwarfs the reads.
constexpr int64_t kPartRows = 256;
constexpr int64_t kMaxParts = 4;
constexpr int64_t kPartSumFloats = int64_t{8} << 20;

int64_t depth_parts(int64_t rows, int64_t weight_floats) {
  int64_t parts = 1;
  while (parts * 2 <= kMaxParts && parts * 2 * kPartRows <= rows && (parts * 2 - 1) * weight_floats <= kPartSumFloats)
    parts *= 2;
  return parts;
}

// The weight's gradient dw [out, in] = g^T x, g [rows, out] and x [rows, in] row-major.
//
// Why by parts of the depth: the layers before split the batch's rows evenly between the
// threads, so each thread's cache holds the rows of g and x it wrote. Split by the rows of dw,
// every thread would read every row of g and x, half of them from the other core's cache;
// where the two cores are far apart (a VM's virtual CPUs on two dies) that made the whole
// step 9% slower. Here the threads take whole parts, in order, so each reads the rows it
// wrote; a part's sum goes to a buffer of its own (the first to dw), and the parts are added
// in order at the end: every element is summed the same way whatever the thread count.
void weight_gradient(int64_t out, int64_t in, int64_t rows, const float* g, const float* x, float* dw) {
  const int64_t parts = depth_parts(rows, out * in);
  if (parts == 1) {
    gemm(true, out, in, rows, g, out, x, in, 1, dw, in);
    return;
  }
  // Parts 1.. of the sums, kept by the calling thread between calls as the packed block. A
  // pointer: in the workers, the name would be their own thread_local.
  thread_local std::vector<float> part_sums;
  part_sums.resize(static_cast<size_t>((parts - 1) * out * in));
  float* const sums = part_sums.data();
  auto sums_of = [&](int64_t part) { return part == 0 ? dw : sums + (part - 1) * out * in; };
  auto first_row = [&](int64_t part) { return part == parts ? rows : rows * part / parts / kRows * kRows; };
  const int64_t row_blocks = (out + kRows - 1) / kRows;
  // Work items part by part, each part's row blocks of dw in order: contiguous ranges of them
  // give each of two or four threads whole parts, and more threads a part's rows each.
  at::parallel_for(0, parts * row_blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end;) {
      const int64_t part = item / row_blocks, block = item % row_blocks;
      const int64_t blocks = std::min(row_blocks - block, end - item);
      const int64_t p0 = first_row(part), depth = first_row(part + 1) - p0;
      multiply_rows_alone(block * kRows, std::min(out, (block + blocks) * kRows), in, depth, g + p0 * out, out,
                          x + p0 * in, sums_of(part), in);
      item += blocks;
    }
  });
  const int64_t size = out * in;
  at::parallel_for(0, size, 4096, [&](int64_t begin, int64_t end) {
    for (int64_t part = 1; part < parts; ++part) {
      const float* add = sums_of(part);
      for (int64_t e = begin; e < end; ++e) dw[e] += add[e];
    }
  });
}

// x [rows, in] w^T: [rows, out].
at::Tensor forward_product(const at::Tensor& x, const at::Tensor& w) {
  const int64_t rows = x.size(0), in = x.size(1), out = w.size(0);
  at::Tensor y = in == 0 ? at::zeros({rows, out}, x.options()) : at::empty({rows, out}, x.options());
  if (in > 0 && rows > 0 && out > 0)
    gemm(false, rows, out, in, x.data_ptr<float>(), in, w.data_ptr<float>(), 1, in, y.data_ptr<float>(), out);
  return y;
}

struct CpuLinear : public torch::autograd::Function<CpuLinear> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w) {
    ctx->save_for_backward({x, w});
    return forward_product(x, w);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    RECORD_FUNCTION("mlh::linear_backward", std::vector<c10::IValue>());
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &w = saved[1];
    const at::Tensor g = grads[0].to(at::kFloat).contiguous();
    const int64_t rows = x.size(0), in = x.size(1), out = w.size(0);
    at::Tensor dx, dw;
    if (ctx->needs_input_grad(0)) {  // dy [rows, out] w [out, in]
      dx = out == 0 ? at::zeros({rows, in}, x.options()) : at::empty({rows, in}, x.options());
      if (rows > 0 && in > 0 && out > 0)
        gemm(false, rows, in, out, g.data_ptr<float>(), out, w.data_ptr<float>(), in, 1, dx.data_ptr<float>(), in);
    }
    if (ctx->needs_input_grad(1)) {  // dy^T [out, rows] x [rows, in]
      dw = rows == 0 ? at::zeros({out, in}, w.options()) : at::empty({out, in}, w.options());
      if (rows > 0 && in > 0 && out > 0)
        weight_gradient(out, in, rows, g.data_ptr<float>(), x.data_ptr<float>(), dw.data_ptr<float>());
    }
    return {dx, dw};
  }
};

bool cpu_has_avx512f() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}

#endif  // MLH_HAS_AVX512_GEMM

}  // namespace

bool cpu_linear_applies(const at::Tensor& x, const at::Tensor& weight) {
#if MLH_HAS_AVX512_GEMM
  auto float_cpu = [](const at::Tensor& t) {
    return t.defined() && t.device().is_cpu() && t.layout() == at::kStrided && t.scalar_type() == at::kFloat;
  };
  return cpu_has_avx512f() && float_cpu(x) && float_cpu(weight) && x.dim() >= 1 && weight.dim() == 2 &&
         x.size(-1) == weight.size(1) && !compat::autocast_enabled(at::kCPU);
#else
  (void)x;
  (void)weight;
  return false;
#endif
}

at::Tensor linear(const at::Tensor& x, const at::Tensor& weight) {
#if MLH_HAS_AVX512_GEMM
  if (cpu_linear_applies(x, weight)) {
    RECORD_FUNCTION("mlh::linear", std::vector<c10::IValue>({x}));
    std::vector<int64_t> out_shape(x.sizes().begin(), x.sizes().end());
    out_shape.back() = weight.size(0);
    int64_t rows = 1;
    for (int64_t d = 0; d + 1 < x.dim(); ++d) rows *= x.size(d);
    const at::Tensor x2 = x.reshape({rows, x.size(-1)}).contiguous(), w = weight.contiguous();
    const bool grad = at::GradMode::is_enabled() && (x.requires_grad() || weight.requires_grad());
    return (grad ? CpuLinear::apply(x2, w) : forward_product(x2, w)).view(out_shape);
  }
#endif
  return at::linear(x, weight);
}

}  // namespace mlh::rt
