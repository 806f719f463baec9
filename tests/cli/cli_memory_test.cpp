// Runs that fit and survive, through the real host with the toyreg plugin under a small CPU
// memory limit (settings file memory_limit_gb): --batch-size auto finds a batch that fits
// whose doubling does not, and caches it; a step that runs out of memory backs off to
// smaller micro-batches with the same batch, learning rate and loss scale; one row that does
// not fit fails naming the limit; a run resumes with a smaller --batch-size.
#include "cli_harness.hpp"

namespace mlhost::cli_test {
namespace {

constexpr Millis kTimeout{300000};
constexpr int64_t kMiB = 1 << 20;

class MemoryTest : public ToyregTest {
 protected:
  void SetUp() override {
    ToyregTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    // 64 MiB of CPU tensor memory for the worker.
    write_file(tmp() / "hw.ini", "memory_limit_gb = 0.0625\n");
  }

  // --print-plan of the same command (no run folder).
  Result print_plan(const std::vector<std::string>& extra) {
    std::vector<std::string> args{"--plugin-dir", toyreg_, "--algorithm", "toyreg", "--hardware-config",
                                  (tmp() / "hw.ini").string(), "--print-plan"};
    args.insert(args.end(), extra.begin(), extra.end());
    RunOptions o;
    o.env["XDG_CACHE_HOME"] = (tmp() / "cache").string();
    return host(args, o);
  }

  Result toyreg(const std::string& run, const std::vector<std::string>& extra) {
    std::vector<std::string> args{"--plugin-dir", toyreg_, "--algorithm", "toyreg", "--run-dir", (tmp() / run).string(),
                                  "--hardware-config", (tmp() / "hw.ini").string(), "--calibration-seconds", "30"};
    args.insert(args.end(), extra.begin(), extra.end());
    RunOptions o;
    o.timeout = kTimeout;
    o.env["XDG_CACHE_HOME"] = (tmp() / "cache").string();
    return host(args, o);
  }
};

TEST_F(MemoryTest, ThePlanCapsCpuTensorMemory) {
  const Result r = host({"--print-plan", "--hardware-config", (tmp() / "hw.ini").string()});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "memory limit")) << r.out;
  EXPECT_TRUE(contains(r.out, "0.0625 GiB")) << "the limit's source names the setting: " << r.out;
}

TEST_F(MemoryTest, BatchSizeAutoFindsWhatFitsAndCachesIt) {
  // --print-plan never searches: nothing is cached yet, and it says so.
  const std::vector<std::string> auto_batch{"--batch-size", "auto", "--set", "row_bytes=1048576", "--set", "steps=10"};
  Result r = print_plan(auto_batch);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "(--batch-size auto: not found yet: a run finds it)")) << r.out;
  EXPECT_FALSE(fs::exists(tmp() / "cache" / "mlhost" / "calibration.json"));

  // 1 MiB of activations a row: about 57 rows fit in 90% of 64 MiB.
  r = toyreg("auto", {"--batch-size", "auto", "--set", "row_bytes=1048576", "--set", "steps=10"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const json plan = file_json(tmp() / "auto" / "plan.json");
  ASSERT_TRUE(plan.contains("batch_size_finder")) << plan.dump(2);
  const json& finder = plan["batch_size_finder"];
  EXPECT_NEAR(plan["memory_limit_bytes"].get<double>(), 64.0 * kMiB, 1024.0) << plan.dump(2);
  const int64_t batch = plan["batch_size"].get<int64_t>();
  EXPECT_EQ(finder["batch"], batch);
  EXPECT_GE(batch, 32) << finder.dump(2);
  EXPECT_LT(batch, 64) << finder.dump(2);
  EXPECT_TRUE(contains(plan["sources"]["batch_size"].get<std::string>(), "batch size finder")) << plan.dump(2);
  EXPECT_TRUE(contains(finder["status"].get<std::string>(), "measured now")) << finder.dump(2);
  bool answer_fits = false, doubling_failed = false;
  for (const json& t : finder["trials"]) {
    if (t["batch"] == batch) answer_fits = t["fits"].get<bool>();
    if (t["batch"].get<int64_t>() > batch && t["batch"].get<int64_t>() <= 2 * batch && !t["fits"].get<bool>())
      doubling_failed = true;
  }
  EXPECT_TRUE(answer_fits) << finder.dump(2);
  EXPECT_TRUE(doubling_failed) << finder.dump(2);
  const json summary = file_json(tmp() / "auto" / "summary.json");
  EXPECT_EQ(summary["result"]["batch_size"], batch) << summary.dump(2);
  EXPECT_EQ(summary["result"]["oom_backoffs"], 0) << summary.dump(2);

  // The same machine, algorithm and config: the cached answer, no search.
  r = toyreg("again", {"--batch-size", "auto", "--set", "row_bytes=1048576", "--set", "steps=10"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const json again = file_json(tmp() / "again" / "plan.json");
  EXPECT_EQ(again["batch_size"], batch);
  EXPECT_TRUE(contains(again["batch_size_finder"]["status"].get<std::string>(), "cached in")) << again.dump(2);
  r = print_plan(auto_batch);
  EXPECT_TRUE(contains(r.out, "batch size finder: " + std::to_string(batch) + " fits")) << r.out;
}

TEST_F(MemoryTest, BatchSizeAutoIsRefusedWhereTheBatchCannotChange) {
  // PPO's batch is its rollout (num_envs x num_steps): no batch_size in its config schema.
  Result r = host({"--algorithm", "ppo", "--batch-size", "auto", "--run-dir", (tmp() / "ppo").string()});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "--batch-size auto: ppo has no batch_size in its config")) << r.err;
  EXPECT_FALSE(fs::exists(tmp() / "ppo" / "summary.json"));
  r = host({"--plugin-dir", toyreg_, "--algorithm", "toyreg", "--batch-size", "automatic"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "--batch-size must be a whole number of at least 1 or auto, got 'automatic'")) << r.err;
}

TEST_F(MemoryTest, AStepOutOfMemoryBacksOffWithTheSameBatchLearningRateAndScale) {
  // 64 rows of 1 MiB do not fit in 64 MiB; 32 do.
  const Result r = toyreg("backoff", {"--batch-size", "64", "--set", "row_bytes=1048576", "--set", "steps=40"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const json summary = file_json(tmp() / "backoff" / "summary.json");
  const json& result = summary["result"];
  EXPECT_EQ(result["oom_backoffs"], 1) << summary.dump(2);
  EXPECT_EQ(result["micro_batch"], 32) << summary.dump(2);
  EXPECT_EQ(result["batch_size"], 64) << "the optimizer's batch changed";
  EXPECT_DOUBLE_EQ(result["lr"].get<double>(), 0.1) << "the learning rate changed";
  const std::vector<json> metrics = read_jsonl(tmp() / "backoff" / "metrics.jsonl");
  double first_loss = -1;
  for (const json& m : metrics)
    if (m.value("name", "") == "train/loss" && first_loss < 0) first_loss = m["value"].get<double>();
  EXPECT_LT(result["final_loss"].get<double>(), first_loss / 10) << "it did not learn: " << summary.dump(2);
  const std::string log = read_file(tmp() / "backoff" / "log.txt");
  EXPECT_TRUE(contains(log, "out of memory with micro-batches of 64 rows")) << log;
  bool metric = false;
  for (const json& m : metrics) metric |= m.value("name", "") == "train/oom_backoffs";
  EXPECT_TRUE(metric) << "no train/oom_backoffs metric";
}

TEST_F(MemoryTest, OneRowThatDoesNotFitFailsNamingTheLimitAndTheBatch) {
  const Result r =
      toyreg("toobig", {"--batch-size", "8", "--set", "row_bytes=" + std::to_string(128 * kMiB), "--set", "steps=5"});
  EXPECT_NE(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.err, "even with micro-batches of 1 row (the batch: 8 rows)")) << r.err;
  EXPECT_TRUE(contains(r.err, "CPU tensor memory limit")) << r.err;
  const json summary = file_json(tmp() / "toobig" / "summary.json");
  EXPECT_TRUE(contains(summary.dump(), "micro-batches of 1 row")) << summary.dump(2);
}

TEST_F(MemoryTest, AStoppedRunResumesWithASmallerBatch) {
  Result r = toyreg("resume", {"--batch-size", "32", "--set", "steps=30", "--set", "checkpoint_every=5", "--set",
                               "fail_at_step=12"});
  ASSERT_NE(r.exit_code, 0) << r.describe();
  // The resumed run keeps its config (config.json) but for what the command line changes.
  r = toyreg("resume", {"--resume", "--batch-size", "16", "--set", "fail_at_step=-1"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const json summary = file_json(tmp() / "resume" / "summary.json");
  EXPECT_EQ(summary["result"]["batch_size"], 16) << summary.dump(2);
  EXPECT_EQ(summary["result"]["steps"], 30) << summary.dump(2);
  EXPECT_TRUE(contains(read_file(tmp() / "resume" / "log.txt"), "resumed from step 10")) << read_file(tmp() / "resume" / "log.txt");
}

}  // namespace
}  // namespace mlhost::cli_test
