// --max-restarts: when a worker the host started crashes, the host stops the others and
// starts them all again from the last checkpoint, up to N times, and the run then ends as an
// uninterrupted one would; when no restart is left the run fails with every cause. toyreg's
// crash_at_step (a real SIGSEGV in the worker) makes the failures; fault_once limits it to the
// first attempt, so that a restart runs clean. Single-threaded LibTorch (a hardware settings
// file) keeps the arithmetic bit-identical, so the weights are compared exactly.
#include <algorithm>

#include "cli_harness.hpp"

namespace mlhost::cli_test {
namespace {

constexpr Millis kRunTimeout{240000};

class RestartTest : public ToyregTest {
 protected:
  void SetUp() override {
    ToyregTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    hardware_ = single_thread_settings(tmp());
  }

  // toyreg for 30 steps, a checkpoint every 5, in `run_dir`, plus `extra`.
  Result train(const fs::path& run_dir, const std::vector<std::string>& extra) {
    std::vector<std::string> args{"--plugin-dir", toyreg_, "--algorithm", "toyreg", "--run-dir", run_dir.string(),
                                  "--device", "cpu", "--hardware-config", hardware_.string(),
                                  "--set", "steps=30", "--set", "lr=0.05", "--set", "checkpoint_every=5",
                                  "--set", "seed=3", "--batch-size", "16"};
    args.insert(args.end(), extra.begin(), extra.end());
    RunOptions o;
    o.timeout = kRunTimeout;
    return host(args, o);
  }

  fs::path hardware_;
};

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST_F(RestartTest, ACrashedRankIsRestartedFromTheLastCheckpointAndEndsAsAnUninterruptedRun) {
  const Result reference = train(tmp() / "reference", {"--nproc-per-node", "2"});
  ASSERT_EQ(reference.exit_code, 0) << reference.describe();
  const json expected = file_json(tmp() / "reference" / "summary.json")["result"];

  // Rank 1 dies of SIGSEGV at step 12; the last checkpoint is step 10.
  const fs::path run = tmp() / "restarted";
  const Result r = train(run, {"--nproc-per-node", "2", "--max-restarts", "1", "--set", "crash_at_step=12", "--set",
                               "fault_rank=1", "--set", "fault_once=true"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.err, "attempt 1 failed: rank 1 was killed by signal 11")) << r.err;
  EXPECT_TRUE(contains(r.err, "restart 1 of 1 from the last checkpoint")) << r.err;
  EXPECT_TRUE(contains(read_file(run / "log.txt"), "from step 10")) << read_file(run / "log.txt");

  const json summary = file_json(run / "summary.json");
  EXPECT_EQ(summary["status"], "completed") << summary.dump(2);
  ASSERT_EQ(summary["restarts"].size(), 1u) << summary.dump(2);
  EXPECT_EQ(summary["restarts"][0]["after_attempt"], 1);
  EXPECT_TRUE(contains(str(summary["restarts"][0]["cause"]), "rank 1 was killed by signal 11")) << summary.dump(2);
  EXPECT_EQ(summary["result"]["w"].get<double>(), expected["w"].get<double>());
  EXPECT_EQ(summary["result"]["b"].get<double>(), expected["b"].get<double>());
  EXPECT_EQ(summary["result"]["final_loss"].get<double>(), expected["final_loss"].get<double>());
  EXPECT_TRUE(read_file(run / "model.safetensors") == read_file(tmp() / "reference" / "model.safetensors"));
  EXPECT_TRUE(wait_for_orphans(Millis(10000)).empty());
}

TEST_F(RestartTest, ASingleProcessRunIsRestartedToo) {
  const Result reference = train(tmp() / "reference", {});
  ASSERT_EQ(reference.exit_code, 0) << reference.describe();
  const fs::path run = tmp() / "restarted";
  const Result r = train(run, {"--max-restarts", "3", "--set", "crash_at_step=17", "--set", "fault_once=true"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const json summary = file_json(run / "summary.json");
  ASSERT_EQ(summary["restarts"].size(), 1u) << summary.dump(2);
  EXPECT_TRUE(contains(str(summary["restarts"][0]["cause"]), "worker killed by signal 11")) << summary.dump(2);
  EXPECT_EQ(summary["result"]["w"].get<double>(),
            file_json(tmp() / "reference" / "summary.json")["result"]["w"].get<double>());

  // Each step's loss once in the metrics, as the uninterrupted run has them: what the crashed
  // attempt logged past its step-15 checkpoint is dropped, and the restart logs it again.
  auto rows = [](const fs::path& dir) {
    std::vector<std::string> jsonl, csv;
    for (const json& m : read_jsonl(dir / "metrics.jsonl"))
      if (m["name"] == "train/loss") jsonl.push_back(std::to_string(m["step"].get<int64_t>()) + " " + m["value"].dump());
    for (const std::string& line : read_lines(dir / "metrics.csv"))
      if (contains(line, ",train/loss,")) csv.push_back(line.substr(0, line.rfind(',')));  // not the launch's time
    return std::make_pair(jsonl, csv);
  };
  const auto expected_rows = rows(tmp() / "reference"), restarted_rows = rows(run);
  EXPECT_EQ(restarted_rows.first, expected_rows.first);
  EXPECT_EQ(restarted_rows.second, expected_rows.second);
  EXPECT_TRUE(contains(read_file(run / "log.txt"), "the rows of step 15 on that an earlier attempt logged"))
      << read_file(run / "log.txt");
  // The time column is the run's elapsed time: the restart goes on from its checkpoint's time.
  double before = 0;
  for (const json& m : read_jsonl(run / "metrics.jsonl")) {
    EXPECT_GE(m["time"].get<double>(), before) << m.dump();
    before = m["time"].get<double>();
  }
}

TEST_F(RestartTest, WithoutMaxRestartsTheFirstFailureEndsTheRun) {
  const fs::path run = tmp() / "run";
  const Result r = train(run, {"--nproc-per-node", "2", "--set", "crash_at_step=12", "--set", "fault_rank=1", "--set",
                               "fault_once=true"});
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_FALSE(contains(r.err, "restart")) << r.err;
  const json summary = file_json(run / "summary.json");
  EXPECT_EQ(summary["status"], "failed") << summary.dump(2);
  EXPECT_FALSE(summary.contains("restarts")) << summary.dump(2);
}

TEST_F(RestartTest, ARankThatKeepsCrashingFailsTheRunAfterTheLastRestartWithEveryCause) {
  const fs::path run = tmp() / "run";
  const Result r = train(run, {"--nproc-per-node", "2", "--max-restarts", "2", "--set", "crash_at_step=12", "--set",
                               "fault_rank=1"});
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "training failed 3 times (--max-restarts 2)")) << r.err;
  for (const char* attempt : {"attempt 1: rank 1 was killed by signal 11", "attempt 2: rank 1 was killed by signal 11",
                              "attempt 3: distributed training failed: rank 1 was killed by signal 11"})
    EXPECT_TRUE(contains(r.err, attempt)) << attempt << "\n" << r.err;
  EXPECT_EQ(count_of(r.err, "from the last checkpoint"), 2u) << r.err;
  const json summary = file_json(run / "summary.json");
  EXPECT_EQ(summary["status"], "failed") << summary.dump(2);
  EXPECT_EQ(summary["failed_rank"], 1) << summary.dump(2);
  EXPECT_EQ(summary["restarts"].size(), 2u) << summary.dump(2);
  EXPECT_TRUE(wait_for_orphans(Millis(10000)).empty());
}

TEST_F(RestartTest, RanksStartedByAnotherLauncherAreRestartedByIt) {
  RunOptions torchrun;
  torchrun.env = {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29999"}};
  const fs::path run = tmp() / "run";
  const Result r = host({"--plugin-dir", toyreg_, "--algorithm", "toyreg", "--run-dir", run.string(), "--max-restarts",
                         "2"},
                        torchrun);
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "torchrun --max-restarts")) << r.err;
  EXPECT_FALSE(fs::exists(run));

  const Result negative = host({"--plugin-dir", toyreg_, "--algorithm", "toyreg", "--max-restarts", "-1"});
  EXPECT_EQ(negative.exit_code, 2) << negative.describe();
  EXPECT_TRUE(contains(negative.err, "--max-restarts must be 0 or more, got -1")) << negative.err;
}

}  // namespace
}  // namespace mlhost::cli_test
