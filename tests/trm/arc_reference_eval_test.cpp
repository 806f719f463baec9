// The TRM reference's own ARC evaluator (its evaluators/arc.py, unmodified, read from
// $MLH_REFERENCE_DIR/trm and run by bench/arc_reference_eval.py with .venv's PyTorch) on
// predictions saved in its format:
// - rows made by hand on the fixture's dataset (right answers, copies of the input that agree
//   across versions, ties in votes broken by halting confidence), scored by our ARC scorer and
//   by the reference's: every pass@K and the submission equal;
// - `eval --set eval_save_predictions=true` on a trained model: the reference's evaluator gives
//   eval's own pass@K and submission.json.
// Skipped, saying why, without the reference (MLH_REFERENCE_DIR, default ../shared/reference)
// or a venv holding torch, numba, pydantic and argdantic (the pypi stage of scripts/test.sh
// makes one).
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "arc_eval.hpp"
#include "arc_fixture.hpp"
#include "data/arc_scoring.hpp"
#include "data/dataset.hpp"
#include "data/sampler.hpp"
#include "saved_predictions.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace {

using nlohmann::json;
namespace fs = std::filesystem;
using trm_test::host;

class ArcReferenceEvaluator : public HostTempDirTest {
 protected:
  ArcReferenceEvaluator() : HostTempDirTest("trm-arc-reference-eval-") {}
  void SetUp() override {
    HostTempDirTest::SetUp();
    const char* venv = std::getenv("MLH_TORCH_VENV");
    python_ = (venv && *venv ? std::string(venv) : std::string(TRM_SOURCE_DIR) + "/.venv") + "/bin/python";
    if (!fs::exists(python_)) GTEST_SKIP() << "no Python at " << python_ << " (bash scripts/torch-venv.sh --peers makes .venv/)";
    const HostResult usage = run_command(python_ + " " + evaluator_ + " 2>&1");
    if (usage.rc == 77) GTEST_SKIP() << usage.output;
  }

  // The reference evaluator's pass@K ("ARC/pass@1", ...) on `predictions`; its submission.json
  // goes to `save_dir`.
  json reference_pass_at(const std::string& data, const std::string& predictions, const std::string& save_dir) {
    const HostResult r = run_command(python_ + " " + evaluator_ + " " + data + " " + predictions + " " + save_dir + " 2>&1");
    EXPECT_EQ(r.rc, 0) << r.output;
    const size_t line = r.output.rfind("\n{");
    const json pass_at = json::parse(r.output.substr(line == std::string::npos ? 0 : line + 1), nullptr, false);
    EXPECT_TRUE(pass_at.is_object()) << r.output;
    return pass_at;
  }

  static void expect_same_pass_at(const json& ours, const json& theirs) {
    for (const int k : trm::arc::kPassKs) {
      const std::string key = "pass@" + std::to_string(k);
      ASSERT_TRUE(theirs.contains("ARC/" + key)) << theirs.dump();
      EXPECT_NEAR(ours.at(key).get<double>(), theirs["ARC/" + key].get<double>(), 1e-12) << key;
    }
  }

  std::string python_;
  const std::string evaluator_ = std::string(TRM_SOURCE_DIR) + "/bench/arc_reference_eval.py";
};

TEST_F(ArcReferenceEvaluator, ScoresHandMadePredictionsAsOurScorer) {
  const std::string data = dir_ + "/arc";
  trm_test::build_arc_data(dir_, data);
  if (HasFatalFailure()) return;
  const std::optional<trm::ArcDatasetFiles> files = trm::load_arc_dataset_files(data);
  ASSERT_TRUE(files.has_value());
  const trm::DatasetSplit test = trm::DatasetSplit::open(data + "/test");

  // Each task's versions in turn: the first task's first two versions copy the input with a
  // high halting logit and the rest answer right with a low one (a tie in votes that confidence
  // breaks for the wrong answer when the versions are even), the second's the other way round,
  // the third answers right but for its first version.
  trm::arc::Votes votes(files->identifiers, test.metadata().blank_identifier_id);
  trm::SavedPredictions saved;
  std::map<std::string, int> versions_seen, task_order;
  trm::EvalBatches batches(test, 5);
  trm::Batch batch;
  while (batches.next(batch)) {
    std::vector<int32_t> preds(batch.inputs.size());
    std::vector<double> q(static_cast<size_t>(batch.rows));
    for (int64_t row = 0; row < batch.valid; ++row) {
      const std::string& name = files->identifiers.at(static_cast<size_t>(batch.puzzle_identifiers[static_cast<size_t>(row)]));
      const std::string task = name.substr(0, name.find("|||"));
      task_order.emplace(task, static_cast<int>(task_order.size()));
      const int version = versions_seen[task]++, which = task_order[task];
      const bool copy = (which == 0 && version < 2) || (which == 1 && version < 2) || (which == 2 && version == 0);
      q[static_cast<size_t>(row)] = which == 0 ? (copy ? 2.0 : 0.5) : (copy ? -1.0 : 1.0);
      for (int64_t t = 0; t < batch.seq_len; ++t) {
        const auto i = static_cast<size_t>(row * batch.seq_len + t);
        preds[i] = copy ? batch.inputs[i] : (batch.labels[i] < 0 ? 0 : batch.labels[i]);  // PAD where unlabelled
      }
      votes.add(batch.puzzle_identifiers[static_cast<size_t>(row)], &batch.inputs[static_cast<size_t>(row * batch.seq_len)],
                &preds[static_cast<size_t>(row * batch.seq_len)], q[static_cast<size_t>(row)]);
    }
    saved.add(batch, batch.valid, preds, q);
  }
  ASSERT_EQ(task_order.size(), 3u);
  const trm::arc::ArcScore ours = trm::arc::score(votes, files->test_puzzles, true, files->test_puzzles_path);
  ASSERT_GT(ours.pass(1), 0.0);
  ASSERT_LT(ours.pass(1), 1.0) << "the fixture should leave some tasks unsolved at pass@1";

  const std::string predictions = dir_ + "/" + trm::SavedPredictions::file_name(0);
  saved.write(predictions);
  const json theirs = reference_pass_at(data, predictions, dir_ + "/ref");
  if (HasFailure()) return;
  expect_same_pass_at(trm::arc_metrics(ours), theirs);
  EXPECT_EQ(json::parse(ours.submission.dump()), read_json_file(dir_ + "/ref/submission.json"));
}

TEST_F(ArcReferenceEvaluator, ScoresTheSavedPredictionsOfEvalAsEvalDoes) {
  const std::string data = dir_ + "/arc", run = dir_ + "/run";
  trm_test::build_and_train_arc(dir_, data, run);
  if (HasFatalFailure()) return;
  const HostResult e = host("--algorithm trm --command eval --resume --device cpu --no-calibrate --run-dir " + run +
                            " --set eval_save_predictions=true");
  ASSERT_EQ(e.rc, 0) << e.output;
  const json ours = read_json_file(run + "/commands/eval-1/summary.json")["result"];
  const std::string predictions =
      run + "/commands/eval-1/" + trm::SavedPredictions::file_name(ours.at("step").get<int64_t>());
  EXPECT_EQ(ours.value("predictions", ""), predictions) << ours.dump();
  ASSERT_TRUE(fs::exists(predictions)) << e.output;

  const json theirs = reference_pass_at(data, predictions, dir_ + "/ref");
  if (HasFailure()) return;
  expect_same_pass_at(ours, theirs);
  EXPECT_EQ(read_json_file(run + "/commands/eval-1/submission.json"), read_json_file(dir_ + "/ref/submission.json"));
}

}  // namespace
