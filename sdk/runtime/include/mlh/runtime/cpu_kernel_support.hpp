// What hand-written CPU kernels (the runtime's fused ops, an algorithm's own) share: float and
// bfloat16 element access that GCC vectorizes, and compiling a kernel once per instruction set.
//
//   MLH_CPU_CLONES void my_kernel(const float* x, ...) { ... }
//
// compiles the function for AVX-512, AVX2 and baseline x86-64, the processor's best chosen
// when the library loads (GCC's target_clones; elsewhere one plain version). Loops written
// over mlh::rt::cpu::load/store in such a function vectorize for each. Compile such a source
// file with -fno-trapping-math (set_source_files_properties(... COMPILE_OPTIONS
// -fno-trapping-math)): without it GCC keeps float comparisons (clamps, maxima, NaN checks)
// as branches and leaves the loop scalar for AVX2 and older; results do not change. (GCC's
// optimize attribute would reset the file's other options in the function: not used.)
// bfloat16 is kept as its 16 bits (uint16_t), converted as c10::BFloat16 converts (round to
// nearest even, NaN kept a NaN).
#pragma once

#include <cstdint>
#include <cstring>
#if defined(__x86_64__) || defined(__SSE__)
#include <xmmintrin.h>
#endif

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MLH_CPU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define MLH_CPU_CLONES
#endif
#define MLH_CPU_INLINE inline __attribute__((always_inline))

namespace mlh::rt::cpu {

using bf16 = uint16_t;  // bfloat16's bits

MLH_CPU_INLINE float load(const float* p, int64_t i) { return p[i]; }
MLH_CPU_INLINE float load(const bf16* p, int64_t i) {
  const uint32_t bits = static_cast<uint32_t>(p[i]) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
MLH_CPU_INLINE void store(float* p, int64_t i, float v) { p[i] = v; }
MLH_CPU_INLINE void store(bf16* p, int64_t i, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  const auto rounded = static_cast<bf16>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
  p[i] = v != v ? static_cast<bf16>(0x7fc0) : rounded;
}
// v as the storage type T holds it (a no-op for float; bf16's rounding otherwise).
template <class T>
MLH_CPU_INLINE float round_to(float v) {
  T stored;
  store(&stored, 0, v);
  return load(&stored, 0);
}

// exp(x) for x within float's finite range of exp ([-87.34, 88.38]), as a float or as a GCC
// vector of floats (Bits: int32_t, or the integer vector of the same size), in place: Cephes'
// expf (range reduction by ln 2, a degree-6 polynomial, the exponent set through the bits),
// within 2 ulp of std::exp.
template <class F, class Bits>
MLH_CPU_INLINE void exp_in_range(F& x) {
  const F shifted = x * 1.44269504088896341f + 12582912.0f;  // 1.5 * 2^23: rounds to an integer
  const F n = shifted - 12582912.0f;
  Bits n_bits;
  std::memcpy(&n_bits, &shifted, sizeof n_bits);
  const Bits exponent = (n_bits - (0x4B400000 - 127)) << 23;
  F r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  F p = r * 1.9875691500e-4f + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  F scale;
  std::memcpy(&scale, &exponent, sizeof scale);
  x = (p * r * r + r + 1.0f) * scale;
}

// exp(x) in float without a library call, so that loops using it vectorize, clamped to float's
// finite range.
MLH_CPU_INLINE float exp_approx(float x) {
  x = x < -87.33654f ? -87.33654f : x;  // selects on values (not std::min's references): they vectorize
  x = x > 88.37626f ? 88.37626f : x;
  exp_in_range<float, int32_t>(x);
  return x;
}

// A rotary embedding on one head's row of d values: out is x rotated by angle tables c and s
// (the half-rotation convention: out[j] = x[j] c[j] - x[j + h] s[j], out[j + h] = x[j + h]
// c[j + h] + x[j] s[j + h]), or by its transpose (the backward: the negative angle); without
// tables, x copied.
//
// Where half a row is whole vectors of 16 (head_dim 32, 64, ...), it runs on them: the scalar
// loop below, vectorized by GCC, checks for overlap and peels on every call, and a row is only
// one or two vectors (that gather took a sixth of attention_from_qkv's forward at head_dim 32).
template <bool kBackward>
MLH_CPU_INLINE void rotate_row(const float* x, float* out, const float* c, const float* s, int64_t d) {
  typedef float Vec16 __attribute__((vector_size(64)));
  constexpr int64_t kLane = 16;
  auto load16 = [](Vec16& v, const float* p) { std::memcpy(&v, p, sizeof v); };
  if (d % (2 * kLane) == 0) {
    const int64_t h = d / 2;
    for (int64_t j = 0; j < h; j += kLane) {
      Vec16 a, b;
      load16(a, x + j);
      load16(b, x + j + h);
      if (c) {
        Vec16 c0, c1, s0, s1;
        load16(c0, c + j);
        load16(c1, c + j + h);
        load16(s0, s + j);
        load16(s1, s + j + h);
        const Vec16 lo = kBackward ? a * c0 + b * s1 : a * c0 - b * s0;
        const Vec16 hi = kBackward ? b * c1 - a * s0 : b * c1 + a * s1;
        a = lo;
        b = hi;
      }
      std::memcpy(out + j, &a, sizeof a);
      std::memcpy(out + j + h, &b, sizeof b);
    }
    return;
  }
  if (!c) {
    for (int64_t j = 0; j < d; ++j) out[j] = x[j];
    return;
  }
  const int64_t h = d / 2;
  for (int64_t j = 0; j < h; ++j) {
    const float a = x[j], b = x[j + h];
    if (kBackward) {
      out[j] = a * c[j] + b * s[j + h];
      out[j + h] = b * c[j + h] - a * s[j];
    } else {
      out[j] = a * c[j] - b * s[j];
      out[j + h] = b * c[j + h] + a * s[j + h];
    }
  }
}

// While one lives, this thread's float arithmetic treats subnormal inputs as zero and flushes
// subnormal results to zero (x86's DAZ and FTZ); the thread's mode is put back when it ends.
// Hold one in each thread of a kernel whose vectorized loop computes both sides of a clamp:
// GCC evaluates the saturated side in every lane (silu's x * sigmoid(-88.4) = x * 2.9e-39, a
// subnormal for any |x| < 4), and on Intel each subnormal result costs a microcode assist
// (SiluMul's forward ran 5-8x slower). Only values below 1.2e-38 change. Elsewhere a no-op.
class DenormalsFlushed {
 public:
#if defined(__x86_64__) || defined(__SSE__)
  DenormalsFlushed() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | kFlushToZero | kDenormalsAreZero); }
  ~DenormalsFlushed() { _mm_setcsr(saved_); }
#else
  DenormalsFlushed() = default;
#endif
  DenormalsFlushed(const DenormalsFlushed&) = delete;
  DenormalsFlushed& operator=(const DenormalsFlushed&) = delete;

#if defined(__x86_64__) || defined(__SSE__)
 private:
  static constexpr unsigned kFlushToZero = 0x8000, kDenormalsAreZero = 0x0040;  // MXCSR bits 15 and 6
  unsigned saved_;
#endif
};

}  // namespace mlh::rt::cpu
