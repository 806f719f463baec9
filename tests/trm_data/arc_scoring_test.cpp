// ARC scoring as the reference's evaluators/arc.py: cropping, undoing augmentations, votes
// pooled over a task's versions, ranking (votes, then mean halting confidence, then first
// seen), pass@K and the submission.
#include <gtest/gtest.h>

#include <cmath>
#include <mlh/plugin.hpp>

#include "data/arc_grid.hpp"
#include "data/arc_scoring.hpp"
#include "data/arc_tokens.hpp"

namespace trm::arc {
namespace {

using nlohmann::ordered_json;

Grid grid(std::vector<std::vector<int>> rows) {
  Grid g;
  g.rows = static_cast<int>(rows.size());
  g.cols = static_cast<int>(rows[0].size());
  for (auto& r : rows)
    for (int v : r) g.cells.push_back(static_cast<uint8_t>(v));
  return g;
}

double logit(double p) { return std::log(p / (1 - p)); }

// Two tasks: "a" with two test inputs, "b" with one.
const Grid kA0In = grid({{1, 2}, {3, 4}}), kA0Out = grid({{4, 3}, {2, 1}});
const Grid kA1In = grid({{5}}), kA1Out = grid({{6, 6}});
const Grid kBIn = grid({{0, 1, 0}}), kBOut = grid({{1, 0, 1}});

ordered_json test_puzzles() {
  ordered_json p = ordered_json::object();
  p["a"] = {{"train", ordered_json::array()},
            {"test", {{{"input", to_json(kA0In)}, {"output", to_json(kA0Out)}},
                      {{"input", to_json(kA1In)}, {"output", to_json(kA1Out)}}}}};
  p["b"] = {{"train", ordered_json::array()}, {"test", {{{"input", to_json(kBIn)}, {"output", to_json(kBOut)}}}}};
  return p;
}

// Identifiers: 0 blank, then the tasks themselves and two augmented versions of "a".
const Augmentation kRot{1, {0, 2, 3, 4, 5, 6, 7, 8, 9, 1}};
const Augmentation kFlip{4, {0, 9, 8, 7, 6, 5, 4, 3, 2, 1}};
std::vector<std::string> identifiers() {
  return {"<blank>", "a", "b", augmented_name("a", kRot), augmented_name("a", kFlip)};
}

// Casts a vote as the model's row would: the version's input and prediction, encoded.
void vote(Votes& v, int32_t id, const Augmentation& aug, const Grid& in, const Grid& pred, double confidence,
          int pad_r = 0, int pad_c = 0) {
  const std::vector<int32_t> input = to_tokens(apply(aug, in)), prediction = to_tokens(apply(aug, pred), pad_r, pad_c);
  v.add(id, input.data(), prediction.data(), logit(confidence));
}

double pass_at(const ArcScore& s, int k) { return s.pass(k); }

TEST(ArcScoring, CropFindsTheGridAndStopsAtEosOrPad) {
  EXPECT_EQ(crop_tokens(to_tokens(kA0In).data()), kA0In);
  // The reference crops from the top-left corner: a translated grid is not found there.
  EXPECT_EQ(crop_tokens(to_tokens(kA0In, 1, 0).data()).rows, 0);
  Grid full;
  full.rows = full.cols = kMaxGridSize;
  full.cells.assign(kMaxGridSize * kMaxGridSize, 7);
  EXPECT_EQ(crop_tokens(to_tokens(full).data()), full);
  // A ragged prediction (a shorter second row) is cut to the largest rectangle; at equal area
  // (1x2 and 2x1) the first found wins.
  std::vector<int32_t> t(kArcSeqLen, 0);
  t[0] = 3, t[1] = 4, t[2] = 1, t[30] = 5, t[31] = 1;
  EXPECT_EQ(crop_tokens(t.data()), grid({{1, 2}}));
  t[60] = 6;  // a third row of one colour: 3x1 (area 3) wins
  EXPECT_EQ(crop_tokens(t.data()), grid({{1}, {3}, {4}}));
}

TEST(ArcScoring, GroundTruthAsPredictionsScoresOneHundredPercent) {
  Votes v(identifiers(), 0);
  vote(v, 1, {}, kA0In, kA0Out, 0.9);
  vote(v, 1, {}, kA1In, kA1Out, 0.9);
  vote(v, 3, kRot, kA0In, kA0Out, 0.8);  // versions of the task undo their augmentation
  vote(v, 4, kFlip, kA1In, kA1Out, 0.7);
  vote(v, 2, {}, kBIn, kBOut, 0.6);
  vote(v, 0, {}, kBIn, kA0Out, 0.99);  // padding rows (the blank identifier) do not vote
  const ArcScore s = score(v, test_puzzles(), true, "test_puzzles.json");
  for (int k : kPassKs) EXPECT_DOUBLE_EQ(pass_at(s, k), 1.0) << "pass@" << k;
  EXPECT_EQ(s.tasks, 2);
  EXPECT_EQ(s.test_inputs, 3);
  EXPECT_EQ(s.inputs_without_predictions, 0);
  EXPECT_EQ(s.submission["a"][0]["attempt_1"], to_json(kA0Out));
  // One candidate only: the second attempt repeats the first, as the reference pads.
  EXPECT_EQ(s.submission["b"][0]["attempt_2"], to_json(kBOut));
}

TEST(ArcScoring, KnownWrongPredictionsGiveTheExpectedPassAtK) {
  Votes v(identifiers(), 0);
  const Grid wrong1 = grid({{0}}), wrong2 = grid({{1, 1}}), wrong3 = grid({{2}});
  // a, input 0: a wrong answer with two votes beats the right one with one: pass@2 only.
  vote(v, 1, {}, kA0In, wrong1, 0.5);
  vote(v, 3, kRot, kA0In, wrong1, 0.5);
  vote(v, 4, kFlip, kA0In, kA0Out, 0.99);
  // a, input 1: the right answer is third: pass@5 only.
  vote(v, 1, {}, kA1In, wrong1, 0.9);
  vote(v, 1, {}, kA1In, wrong2, 0.8);
  vote(v, 1, {}, kA1In, kA1Out, 0.7);
  vote(v, 1, {}, kA1In, wrong3, 0.6);
  // b: no prediction at all.
  const ArcScore s = score(v, test_puzzles(), true, "test_puzzles.json");
  // Tasks: a scores (0 + 0) / 2 at K=1, (1 + 0) / 2 at K=2, (1 + 1) / 2 at K=5; b scores 0.
  EXPECT_DOUBLE_EQ(pass_at(s, 1), 0.0);
  EXPECT_DOUBLE_EQ(pass_at(s, 2), 0.25);
  EXPECT_DOUBLE_EQ(pass_at(s, 5), 0.5);
  EXPECT_DOUBLE_EQ(pass_at(s, 1000), 0.5);
  EXPECT_EQ(s.inputs_without_predictions, 1);
  EXPECT_EQ(s.submission["a"][0]["attempt_1"], to_json(wrong1));
  EXPECT_EQ(s.submission["a"][0]["attempt_2"], to_json(kA0Out));
  EXPECT_EQ(s.submission["a"][1]["attempt_2"], to_json(wrong2));
  // Without a prediction the entry is [[0]] twice, so that every test input has its attempts.
  EXPECT_EQ(s.submission["b"][0]["attempt_1"], ordered_json::parse("[[0]]"));
}

TEST(ArcScoring, TiesBreakByMeanConfidenceThenByFirstSeen) {
  const Grid x = grid({{7}}), y = grid({{8}}), z = grid({{9}});
  Votes v(identifiers(), 0);
  // Equal votes: the higher mean confidence first (z: 0.9 over y: 0.6 mean, though y came first).
  vote(v, 1, {}, kBIn, y, 0.5);
  vote(v, 1, {}, kBIn, y, 0.7);
  vote(v, 1, {}, kBIn, z, 0.9);
  vote(v, 1, {}, kBIn, z, 0.9);
  auto ranked = v.ranked("a", kBIn);
  ASSERT_EQ(ranked.size(), 2u);
  EXPECT_EQ(ranked[0].grid, z);
  EXPECT_EQ(ranked[1].grid, y);
  EXPECT_EQ(ranked[1].votes, 2);
  EXPECT_NEAR(ranked[1].mean_confidence, 0.6, 1e-12);
  // Equal votes and equal confidence: the first seen first, in either order of arrival.
  Votes w(identifiers(), 0);
  vote(w, 2, {}, kBIn, x, 0.75);
  vote(w, 2, {}, kBIn, y, 0.75);
  EXPECT_EQ(w.ranked("b", kBIn)[0].grid, x);
  Votes u(identifiers(), 0);
  vote(u, 2, {}, kBIn, y, 0.75);
  vote(u, 2, {}, kBIn, x, 0.75);
  EXPECT_EQ(u.ranked("b", kBIn)[0].grid, y);
}

TEST(ArcScoring, VotesPoolOverVersionsOfTheSameTestInputOnly) {
  Votes v(identifiers(), 0);
  vote(v, 3, kRot, kA0In, kA0Out, 0.5);
  vote(v, 4, kFlip, kA0In, kA0Out, 0.5);
  vote(v, 1, {}, kA1In, kA0Out, 0.5);  // another input of the task: not pooled with input 0
  auto ranked = v.ranked("a", kA0In);
  ASSERT_EQ(ranked.size(), 1u);
  EXPECT_EQ(ranked[0].votes, 2);
  EXPECT_EQ(v.ranked("a", kA1In).size(), 1u);
  EXPECT_TRUE(v.ranked("b", kA0In).empty());
}

TEST(ArcScoring, BadInputNamesWhatIsWrong) {
  Votes v(identifiers(), 0);
  const std::vector<int32_t> t = to_tokens(kBIn);
  try {
    v.add(9, t.data(), t.data(), 0);
    FAIL() << "an identifier outside identifiers.json was accepted";
  } catch (const mlh::Error& e) {
    EXPECT_NE(std::string(e.what()).find("puzzle identifier 9"), std::string::npos) << e.what();
  }
  Votes bad_name({"<blank>", "a|||t9|||0123456789"}, 0);
  EXPECT_THROW(bad_name.add(1, t.data(), t.data(), 0), mlh::Error);
  ordered_json no_test = {{"a", {{"train", ordered_json::array()}}}};
  try {
    score(v, no_test, true, "tp.json");
    FAIL() << "a task without test pairs was accepted";
  } catch (const mlh::Error& e) {
    EXPECT_NE(std::string(e.what()).find("tp.json: task 'a'"), std::string::npos) << e.what();
  }
  ordered_json ragged = test_puzzles();
  ragged["b"]["test"][0]["input"] = ordered_json::parse("[[1, 2], [3]]");
  try {
    score(v, ragged, true, "tp.json");
    FAIL() << "a ragged grid was accepted";
  } catch (const mlh::Error& e) {
    EXPECT_NE(std::string(e.what()).find("task 'b' test[0].input: ragged row 1"), std::string::npos) << e.what();
  }
}

TEST(ArcScoring, WithoutAnswersOnlyTheSubmission) {
  Votes v(identifiers(), 0);
  vote(v, 2, {}, kBIn, kBOut, 0.5);
  ordered_json challenges = test_puzzles();
  challenges["b"]["test"][0].erase("output");
  const ArcScore s = score(v, challenges, false, "challenges.json");
  EXPECT_TRUE(s.pass_at.empty());
  EXPECT_EQ(s.submission["b"][0]["attempt_1"], to_json(kBOut));
}

}  // namespace
}  // namespace trm::arc
