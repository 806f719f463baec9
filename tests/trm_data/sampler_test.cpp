// TrainSampler and EvalBatches: full batches of examples drawn from the right puzzles, one
// epoch visits every group once, exact resume from state(), eval covers every example once.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "data/sampler.hpp"
#include "fixtures.hpp"

namespace {

using namespace trm;

// The split of fixtures.hpp: example e's input k is 1 + (e + k) % 49, its label e % 50 (0 is
// the ignore label, mapped to -100).
struct Fixture {
  TempDir dir;
  trm_test::SmallSplit small;
  DatasetSplit split;
  Fixture(int groups, int per_group) : small(trm_test::small_split(groups, per_group)) {
    write_dataset_split(dir / "train", small.meta, {small.set});
    split = DatasetSplit::open(dir / "train");
  }
  int64_t puzzle_of(int64_t e) const {
    const auto& pi = small.set.puzzle_indices;
    return std::upper_bound(pi.begin(), pi.end(), e) - pi.begin() - 1;
  }
  int64_t group_of(int64_t p) const {
    const auto& gi = small.set.group_indices;
    return std::upper_bound(gi.begin(), gi.end(), p) - gi.begin() - 1;
  }
  void check_row(const Batch& b, int64_t r) const {
    const int64_t e = b.examples[static_cast<size_t>(r)], p = b.puzzles[static_cast<size_t>(r)];
    EXPECT_EQ(puzzle_of(e), p) << "example " << e;
    EXPECT_EQ(b.puzzle_identifiers[static_cast<size_t>(r)], small.set.puzzle_identifiers[static_cast<size_t>(p)]);
    for (int64_t k = 0; k < b.seq_len; ++k) {
      EXPECT_EQ(b.inputs[static_cast<size_t>(r * b.seq_len + k)], 1 + (e + k) % 49);
      EXPECT_EQ(b.labels[static_cast<size_t>(r * b.seq_len + k)], e % 50 == 0 ? kIgnoreLabel : e % 50);
    }
  }
};

TEST(TrainSampler, FullBatchesFromTheRightPuzzles) {
  Fixture f(10, 3);  // 30 puzzles of 1..3 examples: 60 examples
  TrainSampler s(f.split, 7, 123);
  for (int i = 0; i < 40; ++i) {
    const Batch b = s.next();
    ASSERT_EQ(b.rows, 7);
    ASSERT_EQ(b.valid, 7);
    ASSERT_EQ(b.seq_len, 4);
    ASSERT_EQ(b.inputs.size(), 28u);
    ASSERT_EQ(b.labels.size(), 28u);
    ASSERT_EQ(b.puzzle_identifiers.size(), 7u);
    for (int64_t r = 0; r < 7; ++r) f.check_row(b, r);
  }
  EXPECT_GT(s.epoch(), 0);
  EXPECT_MLH_ERROR(TrainSampler(f.split, 0, 1), "batch_size");
}

TEST(TrainSampler, OneEpochVisitsEveryGroupOnce) {
  // Every puzzle of size 1 and one puzzle per group: a batch of 1 is one group visit.
  TempDir dir;
  auto s = trm_test::small_split(9, 1);
  // Make every puzzle one example: rebuild indices.
  s.set.inputs.clear();
  s.set.labels.clear();
  s.set.puzzle_indices = {0};
  for (int p = 0; p < 9; ++p) {
    for (int k = 0; k < 4; ++k) {
      s.set.inputs.push_back(1 + (p + k) % 49);
      s.set.labels.push_back(p % 50);
    }
    s.set.puzzle_indices.push_back(p + 1);
  }
  write_dataset_split(dir / "t", s.meta, {s.set});
  const DatasetSplit split = DatasetSplit::open(dir / "t");
  TrainSampler sampler(split, 1, 7);
  std::vector<std::set<int64_t>> epochs(3);
  std::vector<std::vector<int64_t>> orders(3);
  for (int i = 0; i < 27; ++i) {
    EXPECT_EQ(sampler.epoch(), i / 9);
    const Batch b = sampler.next();
    epochs[static_cast<size_t>(i / 9)].insert(b.puzzles[0]);
    orders[static_cast<size_t>(i / 9)].push_back(b.puzzles[0]);
  }
  EXPECT_EQ(sampler.epoch(), 3);
  for (const auto& e : epochs) EXPECT_EQ(e.size(), 9u);
  EXPECT_NE(orders[0], orders[1]);  // a new order each epoch (9! orders: equal by chance ~never)
}

TEST(TrainSampler, BatchesContinueAcrossTheEpochBoundary) {
  Fixture f(5, 1);  // 5 groups of one puzzle: sizes 1,2,3,1,2 = 9 examples
  TrainSampler s(f.split, 4, 9);
  // Each epoch takes each puzzle once, whole unless the batch fills first; no batch is short.
  std::map<int64_t, int> count;
  for (int i = 0; i < 9; ++i) {
    const Batch b = s.next();
    ASSERT_EQ(b.valid, 4);
    for (int64_t e : b.examples) ++count[e];
  }
  // At most 9 rows per epoch (fewer when a batch end cuts a puzzle short): at least 3 done.
  EXPECT_GE(s.epoch(), 3);
  int total = 0;
  for (const auto& [e, c] : count) total += c;
  EXPECT_EQ(total, 36);
  EXPECT_EQ(count.size(), 9u);
}

TEST(TrainSampler, StateResumesTheExactSameBatches) {
  Fixture f(12, 2);
  TrainSampler a(f.split, 5, 42);
  for (int i = 0; i < 13; ++i) a.next();
  const nlohmann::json st = a.state();
  std::vector<Batch> expected;
  for (int i = 0; i < 20; ++i) expected.push_back(a.next());
  TrainSampler b(f.split, 5, 999);  // the state's seed wins
  b.load_state(nlohmann::json::parse(st.dump()));  // through text, as a checkpoint stores it
  for (int i = 0; i < 20; ++i) {
    const Batch got = b.next();
    EXPECT_EQ(got.examples, expected[static_cast<size_t>(i)].examples) << i;
    EXPECT_EQ(got.inputs, expected[static_cast<size_t>(i)].inputs) << i;
  }
  EXPECT_EQ(b.epoch(), a.epoch());
  // Same seed, same stream; another seed, another stream.
  TrainSampler c(f.split, 5, 42), d(f.split, 5, 43);
  TrainSampler c2(f.split, 5, 42);
  bool differ = false;
  for (int i = 0; i < 5; ++i) {
    const Batch x = c.next(), y = c2.next(), z = d.next();
    EXPECT_EQ(x.examples, y.examples);
    differ = differ || x.examples != z.examples;
  }
  EXPECT_TRUE(differ);
}

TEST(TrainSampler, MalformedStateIsRefused) {
  Fixture f(4, 2);
  TrainSampler s(f.split, 3, 1);
  const nlohmann::json good = s.state();
  EXPECT_MLH_ERROR(s.load_state(nlohmann::json::array()), "JSON object");
  for (const char* k : {"seed", "batch_size", "epoch", "position", "num_groups", "rng"}) {
    auto j = good;
    j.erase(k);
    EXPECT_MLH_ERROR(s.load_state(j), "'" + std::string(k) + "'");
  }
  auto j = good;
  j["rng"] = "1 2 3";
  EXPECT_MLH_ERROR(s.load_state(j), "'rng'");
  j = good;
  j["rng"] = good["rng"].get<std::string>() + " 5";
  EXPECT_MLH_ERROR(s.load_state(j), "trailing");
  j = good;
  j["position"] = 4;
  EXPECT_MLH_ERROR(s.load_state(j), "'position'");
  j = good;
  j["epoch"] = -1;
  EXPECT_MLH_ERROR(s.load_state(j), "'epoch'");
  j = good;
  j["num_groups"] = 5;
  EXPECT_MLH_ERROR(s.load_state(j), "different dataset");
  j = good;
  j["batch_size"] = 4;
  EXPECT_MLH_ERROR(s.load_state(j), "'batch_size'");
  s.load_state(good);  // still usable
  EXPECT_EQ(s.next().valid, 3);
}

TEST(EvalBatches, EveryExampleOnceInOrderWithPadding) {
  Fixture f(5, 2);  // sizes 1,2,3,1,2,3,1,2,3,1 = 19 examples
  EvalBatches eval(f.split, 8);
  EXPECT_EQ(eval.total(), 19);
  EXPECT_EQ(eval.num_batches(), 3);
  Batch b;
  std::vector<int64_t> seen;
  int batches = 0;
  while (eval.next(b)) {
    ++batches;
    ASSERT_EQ(b.rows, 8);
    ASSERT_EQ(b.inputs.size(), 32u);
    ASSERT_EQ(b.puzzle_identifiers.size(), 8u);
    for (int64_t r = 0; r < b.valid; ++r) {
      f.check_row(b, r);
      seen.push_back(b.examples[static_cast<size_t>(r)]);
    }
    for (int64_t r = b.valid; r < b.rows; ++r) {
      EXPECT_EQ(b.puzzle_identifiers[static_cast<size_t>(r)], 0);  // blank_identifier_id
      for (int64_t k = 0; k < 4; ++k) {
        EXPECT_EQ(b.inputs[static_cast<size_t>(r * 4 + k)], 0);  // pad_id
        EXPECT_EQ(b.labels[static_cast<size_t>(r * 4 + k)], kIgnoreLabel);
      }
    }
  }
  EXPECT_EQ(batches, 3);
  EXPECT_EQ(b.valid, 3);  // 19 = 8 + 8 + 3
  ASSERT_EQ(seen.size(), 19u);
  for (int64_t i = 0; i < 19; ++i) EXPECT_EQ(seen[static_cast<size_t>(i)], i);
  EXPECT_FALSE(eval.next(b));
  eval.reset();
  EXPECT_TRUE(eval.next(b));
  EXPECT_EQ(b.examples.front(), 0);
}

TEST(EvalBatches, SeveralSetsAreConcatenated) {
  TempDir dir;
  auto a = trm_test::small_split(2, 1), c = trm_test::small_split(3, 1);
  c.set.name = "second";
  a.meta.total_groups = 5;
  write_dataset_split(dir / "t", a.meta, {a.set, c.set});
  const DatasetSplit split = DatasetSplit::open(dir / "t");
  EXPECT_EQ(split.metadata().sets, (std::vector<std::string>{"all", "second"}));
  EXPECT_TRUE(split.warnings().empty());
  EvalBatches eval(split, 4);
  Batch b;
  std::vector<int64_t> puzzles;
  std::vector<int32_t> first_inputs;
  while (eval.next(b))
    for (int64_t r = 0; r < b.valid; ++r) {
      puzzles.push_back(b.puzzles[static_cast<size_t>(r)]);
      first_inputs.push_back(b.inputs[static_cast<size_t>(r * 4)]);
    }
  // Set "all": puzzles of 1 and 2 examples; set "second": 1, 2, 3. Global puzzle ids.
  EXPECT_EQ(puzzles, (std::vector<int64_t>{0, 1, 1, 2, 3, 3, 4, 4, 4}));
  // The second set's first example is its own example 0: input 1 + 0.
  EXPECT_EQ(first_inputs[3], 1);
  TrainSampler t(split, 3, 5);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(t.next().valid, 3);
}

}  // namespace
