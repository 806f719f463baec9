#include "numpy_random.hpp"

#include <stdexcept>
#include <string>

namespace trm {
namespace {

// Smallest all-ones mask covering max (gen_mask in numpy's distributions.c).
uint64_t gen_mask(uint64_t max) {
  uint64_t mask = max;
  mask |= mask >> 1;
  mask |= mask >> 2;
  mask |= mask >> 4;
  mask |= mask >> 8;
  mask |= mask >> 16;
  mask |= mask >> 32;
  return mask;
}

}  // namespace

uint64_t NumpyRandom::random_interval(uint64_t max) {
  if (max == 0) return 0;
  const uint64_t mask = gen_mask(max);
  uint64_t value;
  if (max <= 0xffffffffull) {
    while ((value = (next_uint32() & mask)) > max) {
    }
  } else {
    while ((value = (next_uint64() & mask)) > max) {
    }
  }
  return value;
}

int64_t NumpyRandom::randint(int64_t low, int64_t high) {
  if (high <= low) throw std::invalid_argument("randint: high <= low (" + std::to_string(low) + ", " + std::to_string(high) + ")");
  // _rand_int64 -> random_bounded_uint64_fill(off = low, rng = high - 1 - low, use_masked).
  const uint64_t rng = static_cast<uint64_t>(high) - 1 - static_cast<uint64_t>(low);
  const uint64_t off = static_cast<uint64_t>(low);
  if (rng == 0) return low;
  uint64_t v;
  if (rng <= 0xffffffffull) {
    if (rng == 0xffffffffull) {
      v = next_uint32();
    } else {
      const uint32_t mask = static_cast<uint32_t>(gen_mask(rng));
      uint32_t x;
      while ((x = next_uint32() & mask) > rng) {
      }
      v = x;
    }
  } else if (rng == ~uint64_t{0}) {
    v = next_uint64();
  } else {
    const uint64_t mask = gen_mask(rng);
    while ((v = next_uint64() & mask) > rng) {
    }
  }
  return static_cast<int64_t>(off + v);
}

}  // namespace trm
