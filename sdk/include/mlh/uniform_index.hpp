// A uniformly random index in [0, n) from a 64-bit Mersenne Twister, defined by the
// generator's outputs alone: the same on every platform and standard library (unlike
// std::uniform_int_distribution), so that generated data and resumed samplers repeat
// exactly. Rejection of the short top range keeps it unbiased.
#ifndef MLH_UNIFORM_INDEX_HPP
#define MLH_UNIFORM_INDEX_HPP

#include <cstdint>
#include <random>

namespace mlh {

// n >= 1.
inline uint64_t uniform_index(std::mt19937_64& rng, uint64_t n) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do x = rng();
  while (x >= limit);
  return x % n;
}

}  // namespace mlh

#endif  // MLH_UNIFORM_INDEX_HPP
