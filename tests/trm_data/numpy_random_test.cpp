// trm::NumpyRandom against numpy itself: every sequence below was printed by numpy 2.4.6 on
// Python 3.11.7 with the legacy global stream, e.g.
//   python3 -c "import numpy as np; np.random.seed(42); print([int(np.random.randint(0, 8)) for _ in range(12)])"
// (the one-liner is given per test). Ranges of one value draw nothing, ranges over 2**32 take
// the 64-bit path (two 32-bit draws, high half first).
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "data/numpy_random.hpp"

namespace {

std::vector<int64_t> draws(trm::NumpyRandom& r, int64_t low, int64_t high, int n) {
  std::vector<int64_t> v;
  for (int i = 0; i < n; ++i) v.push_back(r.randint(low, high));
  return v;
}

TEST(NumpyRandom, RandintSmallRanges) {
  // np.random.seed(42); [int(np.random.randint(0, 8)) for _ in range(12)]
  trm::NumpyRandom a(42);
  EXPECT_EQ(draws(a, 0, 8, 12), (std::vector<int64_t>{6, 3, 4, 6, 2, 7, 4, 4, 6, 1, 2, 6}));
  // np.random.seed(42); [int(np.random.randint(0, 30)) for _ in range(12)]
  trm::NumpyRandom b(42);
  EXPECT_EQ(draws(b, 0, 30, 12), (std::vector<int64_t>{6, 19, 28, 14, 10, 7, 28, 20, 6, 25, 18, 22}));
  // np.random.seed(4294967295); [int(np.random.randint(0, 10**6)) for _ in range(4)]
  trm::NumpyRandom c(4294967295u);
  EXPECT_EQ(draws(c, 0, 1000000, 4), (std::vector<int64_t>{944547, 147746, 125964, 830535}));
}

TEST(NumpyRandom, RangeOfOneDrawsNothing) {
  // np.random.seed(42); [int(np.random.randint(0, 1)) for _ in range(3)], int(np.random.randint(0, 8))
  trm::NumpyRandom r(42);
  EXPECT_EQ(draws(r, 0, 1, 3), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(r.randint(0, 8), 6);  // the first draw of seed 42, as above
  EXPECT_THROW(r.randint(3, 3), std::invalid_argument);
}

TEST(NumpyRandom, Randint64BitPaths) {
  // np.random.seed(42); [int(np.random.randint(-5, 2**40)) for _ in range(6)]
  trm::NumpyRandom a(42);
  EXPECT_EQ(draws(a, -5, int64_t{1} << 40, 6),
            (std::vector<int64_t>{441507790254, 458615280706, 810017303567, 440001501300, 375095422319, 425815370594}));
  // np.random.seed(42); [int(np.random.randint(-2**63, 2**63-1)) for _ in range(3)]
  trm::NumpyRandom b(42);
  EXPECT_EQ(draws(b, INT64_MIN, INT64_MAX, 3),
            (std::vector<int64_t>{-2314326399425823309, 8314211556539077902, 4279532810384561223}));
  // np.random.seed(42); [int(np.random.randint(0, 2**32)) for _ in range(3)], [int(np.random.randint(0, 2**32+1)) for _ in range(3)]
  trm::NumpyRandom c(42);
  EXPECT_EQ(draws(c, 0, int64_t{1} << 32, 3), (std::vector<int64_t>{1608637542, 3421126067, 4083286876}));
  EXPECT_EQ(draws(c, 0, (int64_t{1} << 32) + 1, 3), (std::vector<int64_t>{3143890026, 670094950, 249467210}));
}

TEST(NumpyRandom, ShuffleAndPermutation) {
  // np.random.seed(42); x = list(range(20)); np.random.shuffle(x); print(x)
  trm::NumpyRandom a(42);
  std::vector<int> x;
  for (int i = 0; i < 20; ++i) x.push_back(i);
  a.shuffle(x);
  EXPECT_EQ(x, (std::vector<int>{0, 17, 15, 1, 8, 5, 11, 3, 18, 16, 13, 2, 9, 19, 4, 12, 7, 10, 14, 6}));
  // np.random.seed(0); x = list(range(5)); np.random.shuffle(x); print(x, int(np.random.randint(0, 1000)))
  trm::NumpyRandom b(0);
  std::vector<int> y{0, 1, 2, 3, 4};
  b.shuffle(y);
  EXPECT_EQ(y, (std::vector<int>{2, 0, 1, 3, 4}));
  EXPECT_EQ(b.randint(0, 1000), 835);
  // np.random.seed(7); two np.random.permutation(np.arange(1, 10, dtype=np.uint8)).tolist()
  trm::NumpyRandom c(7);
  const std::vector<uint8_t> colours{1, 2, 3, 4, 5, 6, 7, 8, 9};
  EXPECT_EQ(c.permutation(colours), (std::vector<uint8_t>{3, 8, 1, 9, 6, 4, 7, 2, 5}));
  EXPECT_EQ(c.permutation(colours), (std::vector<uint8_t>{7, 4, 5, 9, 6, 3, 2, 1, 8}));
  // Empty and single-element sequences draw nothing.
  trm::NumpyRandom d(42);
  std::vector<int> empty, one{5};
  d.shuffle(empty);
  d.shuffle(one);
  EXPECT_EQ(d.randint(0, 8), 6);
}

}  // namespace
