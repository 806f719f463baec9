// ARC grids and augmentations against numpy and the reference's aug / inverse_aug. Expected
// values were printed by numpy 2.4.6 (Python 3.11.7) running the unmodified reference's
// dataset/common.py ($MLH_REFERENCE_DIR/trm, default ../shared/reference):
//   python3 -c "from dataset.common import dihedral_transform; import numpy as np;
//     a = np.array([[1,2,3],[4,5,6]]); [print(t, dihedral_transform(a, t).tolist()) for t in range(8)]"
#include <gtest/gtest.h>

#include <mlh/plugin.hpp>
#include <nlohmann/json.hpp>

#include "data/arc_grid.hpp"
#include "data/numpy_random.hpp"
#include "fixtures.hpp"

namespace {

using trm::arc::Augmentation;
using trm::arc::Grid;

Grid grid(const nlohmann::json& j) { return trm::arc::parse_grid(j, "test"); }

TEST(ArcGrid, DihedralMatchesNumpy) {
  const Grid a = grid({{1, 2, 3}, {4, 5, 6}});
  const nlohmann::json want[8] = {
      {{1, 2, 3}, {4, 5, 6}}, {{3, 6}, {2, 5}, {1, 4}}, {{6, 5, 4}, {3, 2, 1}}, {{4, 1}, {5, 2}, {6, 3}},
      {{3, 2, 1}, {6, 5, 4}}, {{4, 5, 6}, {1, 2, 3}}, {{1, 4}, {2, 5}, {3, 6}}, {{6, 3}, {5, 2}, {4, 1}}};
  for (int t = 0; t < 8; ++t) EXPECT_EQ(trm::arc::dihedral_transform(a, t), grid(want[t])) << "tid " << t;
}

TEST(ArcGrid, EveryTransformRoundTrips) {
  Grid g;
  g.rows = 5;
  g.cols = 7;
  for (int i = 0; i < 35; ++i) g.cells.push_back(static_cast<uint8_t>(i % 10));
  for (int t = 0; t < 8; ++t) {
    EXPECT_EQ(trm::arc::inverse_dihedral_transform(trm::arc::dihedral_transform(g, t), t), g) << t;
    EXPECT_EQ(trm::arc::dihedral_transform(trm::arc::inverse_dihedral_transform(g, t), t), g) << t;
  }
}

TEST(ArcGrid, AugmentationMatchesReferenceAndRoundTrips) {
  // np.random.seed(42); aug("007bbfb7") -> "007bbfb7|||t6|||0926183754"; its _map_grid of
  // [[0,1,2],[3,4,5]] is [[0,6],[9,1],[2,8]], and inverse_aug undoes it.
  const auto [base, a] = trm::arc::parse_augmented_name("007bbfb7|||t6|||0926183754");
  EXPECT_EQ(base, "007bbfb7");
  EXPECT_EQ(a.dihedral, 6);
  EXPECT_EQ(trm::arc::augmented_name(base, a), "007bbfb7|||t6|||0926183754");
  const Grid g = grid({{0, 1, 2}, {3, 4, 5}});
  EXPECT_EQ(trm::arc::apply(a, g), grid({{0, 6}, {9, 1}, {2, 8}}));
  EXPECT_EQ(trm::arc::undo(a, trm::arc::apply(a, g)), g);
  // Random augmentations as aug() draws them: undo(apply(g)) == g for all.
  trm::NumpyRandom rng(1);
  Grid big;
  big.rows = 3;
  big.cols = 4;
  for (int i = 0; i < 12; ++i) big.cells.push_back(static_cast<uint8_t>(i % 10));
  for (int i = 0; i < 50; ++i) {
    Augmentation x;
    x.dihedral = static_cast<int>(rng.randint(0, 8));
    const auto p = rng.permutation(std::vector<uint8_t>{1, 2, 3, 4, 5, 6, 7, 8, 9});
    std::copy(p.begin(), p.end(), x.colour_map.begin() + 1);
    EXPECT_EQ(trm::arc::undo(x, trm::arc::apply(x, big)), big);
    EXPECT_EQ(trm::arc::parse_augmented_name(trm::arc::augmented_name("id", x)).second, x);
  }
}

TEST(ArcGrid, NamesParse) {
  const auto plain = trm::arc::parse_augmented_name("abc");
  EXPECT_EQ(plain.first, "abc");
  EXPECT_EQ(plain.second, Augmentation{});
  // The last two fields count, as name.split("|||")[-2:].
  EXPECT_EQ(trm::arc::parse_augmented_name("a|||x|||t3|||0123456789").first, "a");
  EXPECT_EQ(trm::arc::parse_augmented_name("a|||x|||t3|||0123456789").second.dihedral, 3);
  EXPECT_MLH_ERROR(trm::arc::parse_augmented_name("abc|||t3"), "abc|||t3");
  EXPECT_MLH_ERROR(trm::arc::parse_augmented_name("abc|||t9|||0123456789"), "t9");
  EXPECT_MLH_ERROR(trm::arc::parse_augmented_name("abc|||t1|||0123456788"), "not a permutation");
  EXPECT_MLH_ERROR(trm::arc::parse_augmented_name("abc|||t1|||012345678"), "10 digits");
}

TEST(ArcGrid, ParseGridErrorsNameWhereAndWhat) {
  using J = nlohmann::json;
  EXPECT_MLH_ERROR(trm::arc::parse_grid(J::parse("[[1,2],[3]]"), "f.json: task t: train[2].input"),
                   "f.json: task t: train[2].input: ragged row 1");
  EXPECT_MLH_ERROR(trm::arc::parse_grid(J::parse("[[1,10]]"), "w"), "colour value 10");
  EXPECT_MLH_ERROR(trm::arc::parse_grid(J::parse("[[1,-1]]"), "w"), "colour value -1");
  EXPECT_MLH_ERROR(trm::arc::parse_grid(J::parse("[[1,1.5]]"), "w"), "integer");
  EXPECT_MLH_ERROR(trm::arc::parse_grid(J::parse("[[true]]"), "w"), "integer");
  EXPECT_MLH_ERROR(trm::arc::parse_grid(J::parse("[]"), "w"), "empty");
  EXPECT_MLH_ERROR(trm::arc::parse_grid(J::parse("[[]]"), "w"), "empty");
  EXPECT_MLH_ERROR(trm::arc::parse_grid(J::parse("{}"), "w"), "list of rows");
  EXPECT_MLH_ERROR(trm::arc::parse_grid(J::parse("[1]"), "w"), "row 0 must be a list");
  J wide = J::array({J::array()});
  for (int i = 0; i < 31; ++i) wide[0].push_back(1);
  EXPECT_MLH_ERROR(trm::arc::parse_grid(wide, "w"), "31 columns");
  J tall = J::array();
  for (int i = 0; i < 31; ++i) tall.push_back(J::array({1}));
  EXPECT_MLH_ERROR(trm::arc::parse_grid(tall, "w"), "31 rows");
  try {
    trm::arc::parse_grid(J::parse("[[1,2],[3]]"), "w");
  } catch (const mlh::Error& e) {
    EXPECT_EQ(e.code(), MLH_ERR_INVALID_ARGUMENT);
  }
}

TEST(ArcGrid, JsonRoundTrip) {
  const Grid g = grid({{0, 9}, {3, 4}, {5, 6}});
  EXPECT_EQ(trm::arc::to_json(g).dump(), "[[0,9],[3,4],[5,6]]");
  EXPECT_EQ(trm::arc::parse_grid(trm::arc::to_json(g), "x"), g);
  EXPECT_EQ(g.at(2, 1), 6);
}

}  // namespace
