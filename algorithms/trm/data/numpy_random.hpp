// numpy's legacy global random stream (np.random.seed / randint / shuffle / permutation, i.e.
// numpy.random.RandomState over MT19937), draw for draw: the TRM reference's build_arc_dataset.py
// takes all its randomness from it, and build-data's ARC output must be byte-identical.
// Follows numpy/random/_mt19937 (seed = init_genrand), src/distributions (random_interval,
// random_bounded_uint64_fill with use_masked = true, as the legacy RandomState uses) and
// mtrand.pyx (shuffle: Fisher-Yates from the end).
#pragma once

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace trm {

class NumpyRandom {
 public:
  // np.random.seed(seed) for an integer seed (numpy accepts 0 .. 2**32 - 1).
  explicit NumpyRandom(uint32_t seed) : mt_(seed) {}

  uint32_t next_uint32() { return static_cast<uint32_t>(mt_()); }
  // numpy's mt19937_next64: the first 32-bit draw is the high half.
  uint64_t next_uint64() {
    const uint64_t hi = next_uint32();
    return hi << 32 | next_uint32();
  }
  // Uniform in [0, max] by masked rejection (random_interval); max 0 draws nothing.
  uint64_t random_interval(uint64_t max);
  // np.random.randint(low, high) with the default int64 dtype: uniform in [low, high);
  // a range of one value draws nothing. high <= low throws std::invalid_argument, as numpy.
  int64_t randint(int64_t low, int64_t high);

  // np.random.shuffle(x) of a list or a 1-d array.
  template <typename T>
  void shuffle(std::vector<T>& x) {
    for (size_t i = x.size() > 0 ? x.size() - 1 : 0; i >= 1; --i) {
      const size_t j = static_cast<size_t>(random_interval(i));
      using std::swap;
      swap(x[i], x[j]);
    }
  }
  // np.random.permutation(x) of a 1-d sequence: a shuffled copy.
  template <typename T>
  std::vector<T> permutation(std::vector<T> x) {
    shuffle(x);
    return x;
  }

 private:
  std::mt19937 mt_;
};

}  // namespace trm
