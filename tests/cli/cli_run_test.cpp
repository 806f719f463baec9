// The run path with the toyreg algorithm plugin: describe, config resolution, the run
// folder, the worker's outputs, and how failures, crashes and Ctrl-C end a run.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <thread>

#include <mlh/mlh_abi.h>

#include "cli_harness.hpp"
#include "run_snapshot.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace mlhost::cli_test {
namespace {

constexpr Millis kRunTimeout{180000};

class RunTest : public ToyregTest {
 protected:
  void SetUp() override {
    ToyregTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    run_dir_ = tmp() / "run";
  }

  // host --plugin-dir <toyreg> --algorithm toyreg <extra>
  Result run_toyreg(const std::vector<std::string>& extra, RunOptions o = {}) {
    std::vector<std::string> args{"--plugin-dir", toyreg_, "--algorithm", "toyreg"};
    args.insert(args.end(), extra.begin(), extra.end());
    o.timeout = kRunTimeout;
    return host(args, o);
  }

  // host ... --run-dir <run_dir_> <extra>
  Result train(const std::vector<std::string>& extra) {
    std::vector<std::string> args{"--run-dir", run_dir_.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_toyreg(args);
  }

  // The values of metric `name` in metrics.jsonl, as (step, value).
  std::vector<std::pair<int64_t, double>> metric(const std::string& name, const fs::path& dir) {
    std::vector<std::pair<int64_t, double>> out;
    for (const json& m : read_jsonl(dir / "metrics.jsonl"))
      if (m.value("name", "") == name) out.emplace_back(m["step"].get<int64_t>(), m["value"].get<double>());
    return out;
  }

  void expect_run_dir_untouched() {
    std::error_code ec;
    EXPECT_TRUE(!fs::exists(run_dir_, ec) || fs::is_empty(run_dir_, ec))
        << "the run folder was created or written: " << run_dir_;
  }

  static RunOptions slow() {
    RunOptions o;
    o.timeout = kRunTimeout;
    return o;
  }

  json describe_toyreg() {
    const Result r = host({"--plugin-dir", toyreg_, "--describe", "toyreg", "--json"}, slow());
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    return stdout_json(r);
  }

  fs::path run_dir_;
};

TEST_F(RunTest, DescribePrintsCommandsAndSchema) {
  const json d = describe_toyreg();
  ASSERT_FALSE(d.is_discarded());
  EXPECT_EQ(d["name"], "toyreg");
  // The ABI version its code negotiated (where the newer-ABI note sends an author to look).
  EXPECT_EQ(d["abi"], std::to_string(MLH_ABI_VERSION_MAJOR) + "." + std::to_string(MLH_ABI_VERSION_MINOR));
  EXPECT_EQ(d["commands"], json::array({"train", "eval", "benchmark", "calibrate"}));
  ASSERT_TRUE(d["config_schema"].is_object()) << d.dump(2);
  EXPECT_TRUE(d["config_schema"]["properties"].contains("steps")) << d.dump(2);
  EXPECT_EQ(d["config_defaults"]["steps"], 200);
  EXPECT_TRUE(d["presets"].contains("quick"));
}

// Two training runs read back with TensorBoard's own reader (the tensorboard package in
// .venv/): each holds the hparams plugin's session (the config and the plan's values, and its
// status) beside its scalars, so TensorBoard's HParams dashboard lists them in one table.
TEST_F(RunTest, TensorBoardHparamsCompareRuns) {
  const fs::path python = MLH_CLI_VENV_PYTHON;
  if (!fs::exists(python)) GTEST_SKIP() << "no Python at " << python << " (bash scripts/torch-venv.sh --peers makes .venv/)";
  const fs::path a = tmp() / "lr-0.1", b = tmp() / "lr-0.05";
  ASSERT_EQ(run_toyreg({"--run-dir", a.string(), "--set", "steps=20", "--set", "lr=0.1"}).exit_code, 0);
  ASSERT_EQ(run_toyreg({"--run-dir", b.string(), "--set", "steps=20", "--set", "lr=0.05"}).exit_code, 0);
  const Result r = run({python.string(), std::string(MLH_CLI_PYTHON_DIR) + "/tensorboard_hparams.py", a.string(), b.string()}, slow());
  if (r.exit_code == 77) GTEST_SKIP() << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const json runs = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(runs.is_object()) << r.describe();
  for (const auto& [dir, lr] : {std::make_pair(a, 0.1), std::make_pair(b, 0.05)}) {
    const json& run = runs[dir.string()];
    ASSERT_TRUE(run["hparams"].is_object()) << run.dump(2);
    EXPECT_DOUBLE_EQ(run["hparams"]["lr"].get<double>(), lr);
    EXPECT_EQ(run["hparams"]["steps"], 20);
    EXPECT_EQ(run["hparams"]["algorithm"], "toyreg");
    EXPECT_EQ(run["hparams"]["device"], "cpu");
    EXPECT_TRUE(run["hparams"].contains("plan.precision")) << run.dump(2);
    EXPECT_EQ(run["status"], "STATUS_SUCCESS") << run.dump(2);
    // The table's metric columns: the run's last scalars, as metrics.jsonl has them.
    const auto losses = metric("train/loss", dir);
    ASSERT_FALSE(losses.empty());
    EXPECT_NEAR(run["scalars"]["train/loss"].get<double>(), losses.back().second,
                1e-6 * std::abs(losses.back().second) + 1e-12);
  }
  // `tensorboard --logdir` on their folder lists each run by its folder's name.
  const Result names = run({python.string(), std::string(MLH_CLI_PYTHON_DIR) + "/tensorboard_hparams.py", "--runs", tmp().string()}, slow());
  ASSERT_EQ(names.exit_code, 0) << names.describe();
  EXPECT_EQ(json::parse(names.out), json({"lr-0.05", "lr-0.1"})) << names.out;
}

// A run that fails still ends its hparams session, as a failure.
TEST_F(RunTest, AFailedRunEndsItsHparamsSessionAsAFailure) {
  const fs::path python = MLH_CLI_VENV_PYTHON;
  if (!fs::exists(python)) GTEST_SKIP() << "no Python at " << python << " (bash scripts/torch-venv.sh --peers makes .venv/)";
  const Result t = train({"--set", "steps=20", "--set", "fail_at_step=5"});
  ASSERT_NE(t.exit_code, 0) << t.describe();
  const Result r = run({python.string(), std::string(MLH_CLI_PYTHON_DIR) + "/tensorboard_hparams.py", run_dir_.string()}, slow());
  if (r.exit_code == 77) GTEST_SKIP() << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(json::parse(r.out)[run_dir_.string()]["status"], "STATUS_FAILURE") << r.out;
}

// A run's status is its last launch's: failed, then resumed to the end, it is a success (the
// earlier launch's end is not kept beside it for TensorBoard to read first).
TEST_F(RunTest, AResumedRunEndsItsHparamsSessionAsItsLastLaunchDid) {
  const fs::path python = MLH_CLI_VENV_PYTHON;
  if (!fs::exists(python)) GTEST_SKIP() << "no Python at " << python << " (bash scripts/torch-venv.sh --peers makes .venv/)";
  const std::vector<std::string> faulty{"--set", "steps=20", "--set", "fail_at_step=5", "--set", "fault_once=true",
                                        "--set", "checkpoint_every=2"};
  ASSERT_NE(train(faulty).exit_code, 0);
  auto status = [&] {
    const Result r = run({python.string(), std::string(MLH_CLI_PYTHON_DIR) + "/tensorboard_hparams.py", run_dir_.string()}, slow());
    return r.exit_code == 0 ? json::parse(r.out)[run_dir_.string()]["status"] : json(r.describe());
  };
  ASSERT_EQ(status(), "STATUS_FAILURE");
  const Result resumed = train({"--resume"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.describe();
  EXPECT_EQ(status(), "STATUS_SUCCESS");
  size_t session_files = 0;
  for (const auto& e : fs::directory_iterator(run_dir_))
    session_files += e.path().filename().string().find(".hparams") != std::string::npos;
  EXPECT_EQ(session_files, 1u);
}

// Without --json, --describe is for reading: the commands, the presets, and every config field
// with its default and meaning, as the schema the plugin reports has them.
TEST_F(RunTest, DescribeSummarizesCommandsPresetsAndEveryField) {
  const Result r = host({"--plugin-dir", toyreg_, "--describe", "toyreg"}, slow());
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "toyreg 0.1.0 (ABI " + std::to_string(MLH_ABI_VERSION_MAJOR) + "." +
                                  std::to_string(MLH_ABI_VERSION_MINOR) + "): "))
      << r.out;
  EXPECT_TRUE(contains(r.out, "commands: train, eval, benchmark, calibrate")) << r.out;
  EXPECT_TRUE(contains(r.out, "  quick: ")) << r.out;
  const json d = describe_toyreg();
  ASSERT_TRUE(d["config_schema"]["properties"].is_object()) << d.dump(2);
  for (const auto& [name, field] : d["config_schema"]["properties"].items()) {
    if (field.value("type", json()) == "object") continue;  // nested: its leaves are listed
    EXPECT_TRUE(contains(r.out, "\n  " + name + " ")) << name << " missing:\n" << r.out;
    if (field.contains("description")) {
      EXPECT_TRUE(contains(r.out, field["description"].get<std::string>())) << name << "'s meaning missing:\n" << r.out;
    }
  }
  EXPECT_FALSE(contains(r.out, "\"config_schema\"")) << "JSON only with --json:\n" << r.out;
}

TEST_F(RunTest, DescribeUnknownAlgorithm) {
  const Result r = host({"--plugin-dir", toyreg_, "--describe", "nosuch"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "nosuch")) << r.describe();
  EXPECT_TRUE(contains(r.err, "toyreg")) << "the error should list the algorithms found" << r.describe();
}

// A run is its plugin's: its plan names the plugin, and a resume or a command on the run with
// another --algorithm (a run trained by a copied plugin, here as its plan.json would say) is
// refused, naming both, with nothing written. A run planned before plans named their plugin
// resumes as it did.
TEST_F(RunTest, ARunIsResumedAndUsedOnlyByThePluginThatTrainedIt) {
  ASSERT_EQ(train({"--set", "steps=10", "--max-steps", "5"}).exit_code, 0);
  json plan = file_json(run_dir_ / "plan.json");
  EXPECT_EQ(plan["algorithm"], "toyreg");
  plan["algorithm"] = "mytoy";
  write_file(run_dir_ / "plan.json", plan.dump(2));
  const auto before = training_files(run_dir_.string());
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"--resume"}, std::vector<std::string>{"--resume", "--command", "eval"}}) {
    const Result r = train(command);
    EXPECT_EQ(r.exit_code, 2) << r.describe();
    EXPECT_TRUE(contains(r.err, "--algorithm toyreg: the run in " + run_dir_.string() +
                                    " is the algorithm plugin 'mytoy''s (its plan.json)"))
        << r.describe();
    EXPECT_TRUE(contains(r.err, "use --algorithm mytoy")) << r.describe();
  }
  EXPECT_EQ(changed_files(before, training_files(run_dir_.string())), "");
  EXPECT_FALSE(fs::exists(run_dir_ / "commands"));
  plan.erase("algorithm");
  write_file(run_dir_ / "plan.json", plan.dump(2));
  const Result resumed = train({"--resume"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.describe();
  EXPECT_EQ(file_json(run_dir_ / "plan.json")["algorithm"], "toyreg");
}

TEST_F(RunTest, TrainLearnsAndWritesTheRunFolder) {
  const Result r = train({"--set", "steps=100"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();

  for (const char* f : {"config.json", "plan.json", "probe.json", "log.txt", "metrics.jsonl", "metrics.csv",
                        "summary.json"})
    EXPECT_TRUE(fs::is_regular_file(run_dir_ / f)) << f << " missing in the run folder";

  // TensorBoard events beside the JSONL and CSV metrics (their format: tests/host/tensorboard_test).
  size_t event_files = 0;
  for (const auto& e : fs::directory_iterator(run_dir_))  // in the run folder: TensorBoard names the run by it
    event_files += e.path().filename().string().rfind("events.out.tfevents.", 0) == 0 && fs::file_size(e.path()) > 1000;
  EXPECT_EQ(event_files, 1u);
  const json summary = file_json(run_dir_ / "summary.json");
  ASSERT_FALSE(summary.is_discarded());
  EXPECT_EQ(summary["status"], "completed") << summary.dump(2);
  EXPECT_EQ(summary["algorithm"], "toyreg");
  EXPECT_EQ(summary["command"], "train");

  // It learns: the last loss is under 1% of the first.
  const auto losses = metric("train/loss", run_dir_);
  ASSERT_EQ(losses.size(), 100u);
  EXPECT_EQ(losses.front().first, 0);
  EXPECT_EQ(losses.back().first, 99);
  EXPECT_LT(losses.back().second, 0.01 * losses.front().second)
      << "first " << losses.front().second << ", last " << losses.back().second;

  // metrics.csv holds the same rows as metrics.jsonl, under a header.
  const auto csv = read_lines(run_dir_ / "metrics.csv");
  ASSERT_FALSE(csv.empty());
  EXPECT_EQ(csv[0], "step,name,value,time");
  EXPECT_EQ(csv.size() - 1, read_jsonl(run_dir_ / "metrics.jsonl").size());

  // The thread count LibTorch used is the plan's, set through the CPU plugin's prepare.
  const json plan = file_json(run_dir_ / "plan.json");
  ASSERT_FALSE(plan.is_discarded());
  EXPECT_EQ(plan["device"], "cpu:0");
  EXPECT_EQ(plan["torch_device"], "cpu");
  ASSERT_TRUE(plan["threads"]["intra_op"].is_number_integer()) << plan.dump(2);
  const int intra = plan["threads"]["intra_op"];
  EXPECT_GE(intra, 1);
  ASSERT_TRUE(summary["result"].is_object()) << summary.dump(2);
  EXPECT_EQ(summary["result"]["torch_threads"], intra) << summary.dump(2) << plan.dump(2);
  ASSERT_TRUE(plan.contains("environment") && plan["environment"].contains("OMP_NUM_THREADS"))
      << "the CPU plugin's prepare did not set OMP_NUM_THREADS: " << plan.dump(2);
  EXPECT_EQ(plan["environment"]["OMP_NUM_THREADS"], std::to_string(intra)) << plan.dump(2);

  // config.json: the defaults, under the plan's preset (the CPU rule says "reduced"), with
  // the plan's batch size (the CPU rule says 256) and steps from --set.
  const json d = describe_toyreg();
  ASSERT_FALSE(d.is_discarded());
  EXPECT_EQ(plan["preset"], "reduced") << plan.dump(2);
  EXPECT_EQ(plan["batch_size"], 256) << plan.dump(2);
  json expected = d["config_defaults"];
  expected["samples"] = d["presets"]["reduced"]["samples"];
  expected["steps"] = 100;
  expected["batch_size"] = 256;
  EXPECT_EQ(file_json(run_dir_ / "config.json"), expected);
  EXPECT_EQ(summary["result"]["batch_size"], 256) << summary.dump(2);

  const json probe_json = file_json(run_dir_ / "probe.json");
  EXPECT_EQ(probe_json["chosen"], "cpu:0");
  EXPECT_TRUE(contains(read_file(run_dir_ / "log.txt"), "final loss")) << read_file(run_dir_ / "log.txt");

  // Evaluate the trained model: in a folder of its own inside the run, whose files stay as
  // they were (a later --resume trains on with the training config).
  const auto trained = training_files(run_dir_.string());
  const Result e = run_toyreg({"--resume", "--run-dir", run_dir_.string(), "--command", "eval", "--set", "lr=0.9"});
  ASSERT_EQ(e.exit_code, 0) << e.describe();
  EXPECT_EQ(changed_files(trained, training_files(run_dir_.string())), "");
  EXPECT_TRUE(contains(e.err, "eval: results in " + (run_dir_ / "commands" / "eval-1").string())) << e.describe();
  EXPECT_EQ(file_json(run_dir_ / "commands" / "eval-1" / "config.json")["lr"], 0.9);
  EXPECT_EQ(file_json(run_dir_ / "commands" / "eval-1" / "plan.json")["trained_run_dir"],
            fs::absolute(run_dir_).string());
  // Its log holds what the terminal showed, the last line too.
  EXPECT_TRUE(contains(read_file(run_dir_ / "commands" / "eval-1" / "log.txt"),
                       "[host] [info] eval: results in " + (run_dir_ / "commands" / "eval-1").string()));
  const Result again = run_toyreg({"--resume", "--run-dir", run_dir_.string(), "--command", "eval"});
  ASSERT_EQ(again.exit_code, 0) << again.describe();
  EXPECT_TRUE(fs::exists(run_dir_ / "commands" / "eval-2" / "summary.json")) << "a second eval, a second folder";
  EXPECT_EQ(changed_files(trained, training_files(run_dir_.string())), "");
  const json eval = file_json(run_dir_ / "commands" / "eval-1" / "summary.json");
  ASSERT_FALSE(eval.is_discarded());
  EXPECT_EQ(eval["status"], "completed") << eval.dump(2);
  EXPECT_EQ(eval["command"], "eval");
  ASSERT_TRUE(eval["result"]["parameter_error"].is_number()) << eval.dump(2);
  EXPECT_LT(eval["result"]["parameter_error"].get<double>(), 0.05) << eval.dump(2);
}

// A command on a trained run takes the config the run was trained with; what this command did
// not set again is not the user's choice for it, so the plan says where it came from and never
// warns that it does nothing here.
TEST_F(RunTest, ACommandOnATrainedRunNamesTheTrainedRunsConfigAsTheSource) {
  ASSERT_EQ(train({"--set", "steps=10", "--batch-size", "16"}).exit_code, 0);
  const Result inherited = run_toyreg({"--resume", "--run-dir", run_dir_.string(), "--command", "eval"});
  ASSERT_EQ(inherited.exit_code, 0) << inherited.describe();
  const json plan = file_json(run_dir_ / "commands" / "eval-1" / "plan.json");
  EXPECT_EQ(plan["source_kinds"]["batch_size"], "trained_run") << plan.dump(2);
  EXPECT_EQ(plan["sources"]["batch_size"], "the trained run's config (batch_size)") << plan.dump(2);
  const Result set_now =
      run_toyreg({"--resume", "--run-dir", run_dir_.string(), "--command", "eval", "--set", "batch_size=8"});
  ASSERT_EQ(set_now.exit_code, 0) << set_now.describe();
  EXPECT_EQ(file_json(run_dir_ / "commands" / "eval-2" / "plan.json")["source_kinds"]["batch_size"], "config");
}

// A command on a trained run that fails says which command failed, not "training".
TEST_F(RunTest, AFailedEvalIsReportedAsTheEval) {
  ASSERT_EQ(train({"--set", "steps=10"}).exit_code, 0);
  // Checkpoints that are all damaged: a failure (no checkpoints at all is the user's to fix, exit 2).
  for (const auto& e : fs::directory_iterator(run_dir_ / "checkpoints")) write_file(e.path(), "damaged");
  const Result e = run_toyreg({"--resume", "--run-dir", run_dir_.string(), "--command", "eval"});
  EXPECT_EQ(e.exit_code, 1) << e.describe();
  EXPECT_TRUE(contains(e.err, "'eval' failed")) << e.describe();
  EXPECT_FALSE(contains(e.err, "training failed")) << e.describe();
}

// --resume names the folder it cannot continue, and points at --resume auto where that is
// what the user wants: the same command to start the run and to continue it.
TEST_F(RunTest, ResumeOfNoRunSaysWhyAndPointsAtResumeAuto) {
  for (const bool make : {false, true}) {
    if (make) fs::create_directories(run_dir_);
    const Result r = train({"--resume"});
    EXPECT_EQ(r.exit_code, 2) << r.describe();
    EXPECT_TRUE(contains(r.err, run_dir_.string())) << r.describe();
    EXPECT_TRUE(contains(r.err, make ? "holds no run" : "does not exist")) << r.describe();
    EXPECT_TRUE(contains(r.err, "--resume auto")) << r.describe();
  }
}

// --resume auto: one command for every launch of a preemptible or requeued job. A missing
// folder starts a run; the same command again continues it; an empty folder starts one; a
// folder of other files is refused, naming it, and nothing in it is touched.
TEST_F(RunTest, ResumeAutoStartsOrContinuesTheRunWithTheSameCommand) {
  const std::vector<std::string> same{"--resume", "auto", "--set", "steps=20", "--set", "checkpoint_every=5"};
  const Result first = train(same);
  ASSERT_EQ(first.exit_code, 0) << first.describe();
  EXPECT_TRUE(contains(first.err, "--resume auto: starting a new run in " + run_dir_.string())) << first.describe();
  EXPECT_EQ(file_json(run_dir_ / "summary.json")["status"], "completed");
  ASSERT_EQ(metric("train/loss", run_dir_).size(), 20u);

  const Result again = train(same);
  ASSERT_EQ(again.exit_code, 0) << again.describe();
  EXPECT_TRUE(contains(again.err, "--resume auto: continuing the run in")) << again.describe();
  EXPECT_TRUE(contains(again.err, "completed (summary.json): nothing to resume")) << again.describe();
  EXPECT_EQ(metric("train/loss", run_dir_).size(), 20u) << "nothing trained twice";

  const fs::path empty = tmp() / "empty";
  fs::create_directories(empty);
  const Result fresh = run_toyreg({"--resume=auto", "--run-dir", empty.string(), "--set", "steps=5"});
  ASSERT_EQ(fresh.exit_code, 0) << fresh.describe();
  EXPECT_EQ(file_json(empty / "summary.json")["status"], "completed");

  const fs::path other = tmp() / "other";
  write_file(other / "notes.txt", "mine");
  const Result refused = run_toyreg({"--resume", "auto", "--run-dir", other.string(), "--set", "steps=5"});
  EXPECT_EQ(refused.exit_code, 2) << refused.describe();
  EXPECT_TRUE(contains(refused.err, "'" + other.string() + "' holds files but no run")) << refused.describe();
  EXPECT_EQ(read_file(other / "notes.txt"), "mine");
  EXPECT_FALSE(fs::exists(other / "config.json"));

  const Result bad = run_toyreg({"--resume=later", "--run-dir", other.string()});
  EXPECT_EQ(bad.exit_code, 2) << bad.describe();
  EXPECT_TRUE(contains(bad.err, "--resume takes no value, or 'auto'; got 'later'")) << bad.describe();
}

TEST_F(RunTest, ConfigFileAndSetOverrides) {
  write_file(tmp() / "cfg.json", R"({"steps": 7, "lr": 0.2, "label": "from-file"})");
  const Result r = train({"--config", (tmp() / "cfg.json").string(), "--set", "label=from-set"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const json config = file_json(run_dir_ / "config.json");
  EXPECT_EQ(config["steps"], 7);
  EXPECT_EQ(config["lr"], 0.2);
  EXPECT_EQ(config["label"], "from-set") << "--set wins over --config";
  const json summary = file_json(run_dir_ / "summary.json");
  EXPECT_EQ(summary["result"]["label"], "from-set");
  EXPECT_EQ(metric("train/loss", run_dir_).size(), 7u);
}

TEST_F(RunTest, RunsOnTheChosenFakeGpu) {
  REQUIRE_CASE("good-gpu");
  const Result r = train({"--plugin-dir", case_dir("good-gpu").string(), "--set", "steps=5"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const json plan = file_json(run_dir_ / "plan.json");
  EXPECT_EQ(plan["device"], "fakegpu:0") << plan.dump(2);
  EXPECT_EQ(plan["device_class"], "discrete gpu");
  EXPECT_EQ(file_json(run_dir_ / "summary.json")["status"], "completed");
}

// ABI stability: a device plugin compiled against the frozen 1.0 headers is probed,
// prepared (its environment reaches the plan) and sampled by this host, and a run trains on it.
TEST_F(RunTest, RunsOnAPluginBuiltAgainstTheFrozenAbi10Headers) {
  REQUIRE_CASE("abi-v1-0");
  const Result r = train({"--plugin-dir", case_dir("abi-v1-0").string(), "--device", "abi-v1-0:0", "--set",
                          "steps=25", "--set", "step_delay_ms=60"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const json plan = file_json(run_dir_ / "plan.json");
  EXPECT_EQ(plan["device"], "abi-v1-0:0") << plan.dump(2);
  EXPECT_EQ(plan["environment"]["MLH_ABI_V1_0_PREPARED"], "1") << plan.dump(2);
  const std::vector<json> samples = read_jsonl(run_dir_ / "telemetry.jsonl");
  ASSERT_FALSE(samples.empty()) << "no telemetry from the 1.0 plugin";
  EXPECT_DOUBLE_EQ(samples[0]["utilization_percent"].get<double>(), 42.0);
  EXPECT_EQ(file_json(run_dir_ / "summary.json")["status"], "completed");
}

// The host sets every worker's CPU side from the plan, whatever the device: the shipped
// example device plugin has no thread or allocator code, and its run still gets the plan's
// threads and allocator, as the worker itself reports them.
TEST_F(RunTest, AThirdPartyDeviceGetsThePlansThreadsAndAllocatorWithoutCodeOfItsOwn) {
  REQUIRE_CASE("cpuset");
  for (const std::string allocator : {"auto", "glibc-tuned"}) {
    SCOPED_TRACE(allocator);
    fs::remove_all(run_dir_);
    const Result r = train({"--plugin-dir", case_dir("cpuset").string(), "--device", "cpuset", "--allocator", allocator,
                            "--no-calibrate", "--set", "steps=5"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    const json plan = file_json(run_dir_ / "plan.json");
    const json summary = file_json(run_dir_ / "summary.json");
    EXPECT_EQ(plan["device"], "cpuset:0") << plan.dump(2);
    EXPECT_FALSE(plan.contains("warnings")) << plan.dump(2);
    const json& env = plan["environment"];
    // The device's own variable, and the host's CPU side beside it.
    EXPECT_TRUE(env.contains("GOMP_CPU_AFFINITY")) << env.dump(2);
    const int intra = plan["threads"]["intra_op"];
    for (const char* var : {"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"})
      EXPECT_EQ(env.value(var, ""), std::to_string(intra)) << var << " " << env.dump(2);
    // What the worker reports agrees with the plan.
    EXPECT_EQ(summary["result"]["torch_threads"], intra) << summary.dump(2);
    EXPECT_EQ(summary["result"]["plan_applied"]["threads"]["intra_op"], intra) << summary.dump(2);
    const std::string planned = plan["allocator"]["name"];
    const std::string running = summary["worker"]["allocator"];
    EXPECT_EQ(running.substr(0, running.find(' ')), planned == "glibc-tuned" ? "glibc" : planned) << summary.dump(2);
    if (planned == "glibc-tuned") {
      EXPECT_TRUE(contains(running, "glibc.malloc.mmap_threshold")) << running;
    }
    if (allocator == "glibc-tuned") {
      EXPECT_EQ(planned, "glibc-tuned");
    }
    if (allocator == "auto") {
      EXPECT_EQ(plan["source_kinds"]["allocator"], "default") << "auto is no choice of the user's";
    }
  }
}

// An algorithm plugin built against the ABI 1.0 headers (no describe_run) is described,
// planned and run by this host; its plan's values are shown as given, and it says so.
TEST_F(CliTest, RunsAnAlgorithmBuiltAgainstTheFrozenAbi10Headers) {
  const std::string dir = case_dir("abi-v1-0-algo").string();
  ASSERT_TRUE(fs::exists(dir)) << dir;
  Result r = host({"--print-plan", "--plugin-dir", dir, "--algorithm", "abi-v1-0-algo", "--no-hardware-config"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "(the algorithm does not say which plan fields it uses: shown as given)")) << r.describe();
  EXPECT_FALSE(contains(r.out, "no effect: abi-v1-0-algo")) << r.describe();
  r = host({"--plugin-dir", dir, "--algorithm", "abi-v1-0-algo", "--run-dir", (tmp() / "run").string(), "--no-calibrate"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const json summary = file_json(tmp() / "run" / "summary.json");
  EXPECT_EQ(summary["status"], "completed") << summary.dump(2);
  EXPECT_EQ(summary["result"]["abi"], "1.0");
  EXPECT_EQ(file_json(tmp() / "run" / "plan.json")["effects_declared"], false);
}

TEST_F(RunTest, DefaultRunFolderIsUnderRuns) {
  const Result r = run_toyreg({"--set", "steps=3"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  ASSERT_TRUE(fs::is_directory(tmp() / "runs")) << r.describe();
  std::vector<fs::path> runs;
  for (const auto& e : fs::directory_iterator(tmp() / "runs")) runs.push_back(e.path());
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].filename().string().rfind("toyreg-", 0), 0u) << runs[0];
  EXPECT_EQ(file_json(runs[0] / "summary.json")["status"], "completed");
}

// --- bad run requests ----------------------------------------------------------------------

TEST_F(RunTest, SetWithWrongTypeNamesTheField) {
  const Result r = train({"--set", "steps=abc"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "'steps'")) << r.describe();
  expect_run_dir_untouched();
}

TEST_F(RunTest, SetOutOfRangeNamesTheField) {
  const Result r = train({"--set", "steps=0"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "'steps'")) << r.describe();
  expect_run_dir_untouched();
}

TEST_F(RunTest, SetUnknownKeyIsRefused) {
  const Result r = train({"--set", "nosuch=1"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "'nosuch'")) << r.describe();
  EXPECT_TRUE(contains(r.err, "unknown")) << r.describe();
  expect_run_dir_untouched();
}

TEST_F(RunTest, SetWithoutEqualsIsRefused) {
  const Result r = train({"--set", "steps"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "key=value")) << r.describe();
  expect_run_dir_untouched();
}

TEST_F(RunTest, MissingConfigFileIsNamed) {
  const fs::path missing = tmp() / "missing.json";
  const Result r = train({"--config", missing.string()});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, missing.string())) << r.describe();
  expect_run_dir_untouched();
}

TEST_F(RunTest, InvalidJsonConfigNamesFileAndLine) {
  const fs::path bad = tmp() / "bad.json";
  write_file(bad, "{\n  \"steps\": 10,\n  \"lr\": oops\n}\n");
  const Result r = train({"--config", bad.string()});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, bad.string())) << r.describe();
  EXPECT_TRUE(contains(r.err, "line 3")) << r.describe();
  expect_run_dir_untouched();
}

TEST_F(RunTest, BadConfigCreatesNoDefaultRunFolder) {
  const Result r = run_toyreg({"--set", "steps=abc"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_FALSE(fs::exists(tmp() / "runs")) << "a refused run created runs/";
}

TEST_F(RunTest, ExistingRunFolderIsNotOverwritten) {
  write_file(run_dir_ / "config.json", "{\"steps\": 1}\n");
  write_file(run_dir_ / "notes.txt", "precious\n");
  write_file(run_dir_ / "sub" / "deep.txt", "also precious\n");
  const auto before = snapshot_dir(run_dir_);
  const Result r = train({"--set", "steps=5"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, run_dir_.string())) << r.describe();
  EXPECT_TRUE(contains(r.err, "--resume")) << r.describe();
  EXPECT_EQ(snapshot_dir(run_dir_), before) << "files in the existing run folder changed";
}

TEST_F(RunTest, ResumeOfAFolderWithoutARun) {
  const Result missing = run_toyreg({"--resume", "--run-dir", run_dir_.string()});
  EXPECT_EQ(missing.exit_code, 2) << missing.describe();
  EXPECT_TRUE(contains(missing.err, run_dir_.string())) << missing.describe();
  expect_run_dir_untouched();

  fs::create_directories(run_dir_);
  const Result empty = run_toyreg({"--resume", "--run-dir", run_dir_.string()});
  EXPECT_EQ(empty.exit_code, 2) << empty.describe();
  EXPECT_TRUE(contains(empty.err, "config.json")) << empty.describe();
  expect_run_dir_untouched();
}

TEST_F(RunTest, UnknownCommandIsRefused) {
  const Result r = train({"--command", "nope"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "nope")) << r.describe();
  EXPECT_TRUE(contains(r.err, "train")) << "the error should list the commands" << r.describe();
  expect_run_dir_untouched();
}

TEST_F(RunTest, UnknownAlgorithmIsRefused) {
  const Result r = host({"--plugin-dir", toyreg_, "--algorithm", "nosuch", "--run-dir", run_dir_.string()});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "'nosuch'")) << r.describe();
  expect_run_dir_untouched();
}

TEST_F(RunTest, NoUsableDeviceFailsBeforeTheRunFolder) {
  const Result r = host({"--plugin-dir", toyreg_, "--no-default-plugin-dir", "--algorithm", "toyreg", "--run-dir",
                         run_dir_.string()},
                        slow());
  EXPECT_NE(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.err, "no device")) << r.describe();
  expect_run_dir_untouched();
}

// --- how a run ends ------------------------------------------------------------------------

TEST_F(RunTest, FailingAlgorithmIsReportedAndKeepsItsMetrics) {
  const Result r = train({"--set", "fail_at_step=5"});
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "failing on purpose at step 5")) << r.describe();
  const json summary = file_json(run_dir_ / "summary.json");
  ASSERT_FALSE(summary.is_discarded());
  EXPECT_EQ(summary["status"], "failed") << summary.dump(2);
  EXPECT_TRUE(contains(str(summary["error"]), "failing on purpose at step 5")) << summary.dump(2);
  const auto losses = metric("train/loss", run_dir_);
  ASSERT_EQ(losses.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(losses[i].first, i);
}

TEST_F(RunTest, CrashingWorkerIsReportedAndKeepsItsMetrics) {
  const Result r = train({"--set", "crash_at_step=30"});
  EXPECT_NE(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.signal, 0) << "the host itself must survive the worker's crash" << r.describe();
  EXPECT_TRUE(contains(r.err, "signal 11")) << r.describe();
  const json summary = file_json(run_dir_ / "summary.json");
  ASSERT_FALSE(summary.is_discarded());
  EXPECT_EQ(summary["status"], "crashed") << summary.dump(2);
  EXPECT_EQ(summary["signal"], 11) << summary.dump(2);
  const auto losses = metric("train/loss", run_dir_);
  ASSERT_EQ(losses.size(), 30u);
  for (int i = 0; i < 30; ++i) EXPECT_EQ(losses[i].first, i);
  EXPECT_TRUE(fs::is_regular_file(run_dir_ / "config.json"));
  EXPECT_TRUE(fs::is_regular_file(run_dir_ / "log.txt"));
}

TEST_F(RunTest, InterruptCancelsAndResumeContinues) {
  RunOptions o;
  o.cwd = tmp();
  Process p({host_path().string(), "--plugin-dir", toyreg_, "--algorithm", "toyreg", "--run-dir", run_dir_.string(),
             "--set", "steps=100000", "--set", "step_delay_ms=20", "--set", "checkpoint_every=1000000"},
            o);
  // Wait until training is under way (LibTorch loaded, steps being logged).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  size_t losses_seen = 0;
  while (std::chrono::steady_clock::now() < deadline && p.running()) {
    losses_seen = metric("train/loss", run_dir_).size();
    if (losses_seen >= 10) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_GE(losses_seen, 10u) << "training did not start" << p.wait(Millis(0)).describe();

  ASSERT_EQ(::kill(p.pid(), SIGINT), 0);
  const auto sent = std::chrono::steady_clock::now();
  const Result r = p.wait(Millis(20000));
  const double stop_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - sent).count();
  EXPECT_EQ(r.exit_code, 130) << r.describe();
  EXPECT_LT(stop_ms, 5000) << "the run took too long to stop after SIGINT";

  const json summary = file_json(run_dir_ / "summary.json");
  ASSERT_FALSE(summary.is_discarded()) << r.describe();
  EXPECT_EQ(summary["status"], "cancelled") << summary.dump(2);
  // The runtime's checkpoint of the cancel: checkpoints/step-<9 digits>.ckpt.
  int64_t saved = -1;
  if (fs::is_directory(run_dir_ / "checkpoints"))
    for (const auto& e : fs::directory_iterator(run_dir_ / "checkpoints")) {
      const std::string name = e.path().filename().string();
      if (name.rfind("step-", 0) == 0) saved = std::max<int64_t>(saved, std::stoll(name.substr(5, 9)));
    }
  ASSERT_GE(saved, 0) << "no checkpoint saved on cancel";
  EXPECT_GT(saved, 0);
  // The state is the step the run stopped at (checkpoint_every is huge, so only the cancel saved it).
  EXPECT_GE(saved, static_cast<int64_t>(losses_seen));
  EXPECT_EQ(saved, static_cast<int64_t>(metric("train/loss", run_dir_).size()));

  // Resume with a target a little further on: it continues from the saved step and completes.
  const int64_t target = saved + 20;
  const Result resumed = run_toyreg({"--resume", "--run-dir", run_dir_.string(), "--set",
                                     "steps=" + std::to_string(target), "--set", "step_delay_ms=0"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.describe();
  EXPECT_TRUE(contains(read_file(run_dir_ / "log.txt"), "resumed from step " + std::to_string(saved)))
      << read_file(run_dir_ / "log.txt");
  const json done = file_json(run_dir_ / "summary.json");
  EXPECT_EQ(done["status"], "completed") << done.dump(2);
  const auto losses = metric("train/loss", run_dir_);
  ASSERT_FALSE(losses.empty());
  EXPECT_EQ(losses.back().first, target - 1);
  EXPECT_EQ(losses.size(), static_cast<size_t>(target)) << "every step logged once across both runs";
  EXPECT_EQ(file_json(run_dir_ / "config.json")["steps"], target);
}

TEST_F(RunTest, TrainingLeavesCheckpointsAndSafetensorsWeights) {
  const Result r = train({"--set", "steps=120", "--set", "checkpoint_every=40"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  for (const char* f : {"step-000000040.ckpt", "step-000000080.ckpt", "step-000000120.ckpt", "best.ckpt"})
    EXPECT_TRUE(fs::is_regular_file(run_dir_ / "checkpoints" / f)) << f;
  // safetensors: an 8-byte little-endian header length, then a JSON header naming the tensors.
  const std::string weights = read_file(run_dir_ / "model.safetensors");
  ASSERT_GT(weights.size(), 8u);
  uint64_t header_length = 0;
  std::memcpy(&header_length, weights.data(), 8);
  ASSERT_LE(8 + header_length, weights.size());
  const json header = json::parse(weights.substr(8, header_length), nullptr, false);
  ASSERT_FALSE(header.is_discarded());
  EXPECT_EQ(header["weight"]["dtype"], "F32") << header.dump(2);
  EXPECT_EQ(header["weight"]["shape"], json::parse("[1, 1]"));
  EXPECT_TRUE(header.contains("bias")) << header.dump(2);
}

// --max-steps ends training early as at a normal end: the last checkpoint, the weights and a
// completed summary that says so; the plan shows where the value came from, and a command
// that does not train marks it as doing nothing.
TEST_F(RunTest, MaxStepsEndsTrainingEarlyAsANormalEnd) {
  const Result r = train({"--set", "steps=500", "--set", "checkpoint_every=4", "--max-steps", "7"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const json summary = file_json(run_dir_ / "summary.json");
  EXPECT_EQ(summary["status"], "completed") << summary.dump(2);
  EXPECT_EQ(summary["result"]["steps"], 7) << summary.dump(2);
  EXPECT_EQ(summary["result"]["max_steps"], 7) << summary.dump(2);
  for (const char* f : {"step-000000004.ckpt", "step-000000007.ckpt", "best.ckpt"})
    EXPECT_TRUE(fs::is_regular_file(run_dir_ / "checkpoints" / f)) << f;
  EXPECT_FALSE(fs::exists(run_dir_ / "checkpoints" / "step-000000008.ckpt"));
  EXPECT_TRUE(fs::is_regular_file(run_dir_ / "model.safetensors"));
  EXPECT_EQ(metric("train/loss", run_dir_).size(), 7u);
  EXPECT_TRUE(contains(r.err, "--max-steps 7: training ends at step 7")) << r.describe();
  const json plan = file_json(run_dir_ / "plan.json");
  EXPECT_EQ(plan["max_steps"], 7);
  EXPECT_EQ(plan["source_kinds"]["max_steps"], "command_line") << plan.dump(2);
  EXPECT_FALSE(plan.value("no_effect", json::object()).contains("max_steps")) << plan.dump(2);

  const Result shown = run_toyreg({"--print-plan", "--max-steps", "7"});
  ASSERT_EQ(shown.exit_code, 0) << shown.describe();
  EXPECT_TRUE(contains(shown.out, "max steps                7")) << shown.describe();
  EXPECT_TRUE(contains(shown.out, "command line --max-steps")) << shown.describe();
  const Result eval = train({"--resume", "--command", "eval", "--max-steps", "7"});
  ASSERT_EQ(eval.exit_code, 0) << eval.describe();
  EXPECT_TRUE(contains(eval.out + eval.err, "7 (no effect: eval does not train)")) << eval.describe();

  // MLH_MAX_STEPS stands in for the option on a run of an algorithm, and says so; it is ignored
  // where no algorithm runs, and a bad value is refused naming the variable.
  const Result from_env = run_toyreg({"--print-plan"}, {{{"MLH_MAX_STEPS", "5"}}});
  ASSERT_EQ(from_env.exit_code, 0) << from_env.describe();
  EXPECT_TRUE(contains(from_env.out, "max steps                5")) << from_env.describe();
  EXPECT_TRUE(contains(from_env.out, "environment MLH_MAX_STEPS")) << from_env.describe();
  const Result option_wins = run_toyreg({"--print-plan", "--max-steps", "7"}, {{{"MLH_MAX_STEPS", "5"}}});
  EXPECT_TRUE(contains(option_wins.out, "max steps                7")) << option_wins.describe();
  EXPECT_EQ(host({"--probe"}, {{{"MLH_MAX_STEPS", "5"}}}).exit_code, 0);
  const Result bad = run_toyreg({"--print-plan"}, {{{"MLH_MAX_STEPS", "soon"}}});
  EXPECT_EQ(bad.exit_code, 2) << bad.describe();
  EXPECT_TRUE(contains(bad.err, "MLH_MAX_STEPS must be a whole number")) << bad.describe();
}

// A finished run's record is never rewritten: --resume with nothing more to do says so and
// changes nothing, nor does a command on the run; a resume the algorithm refuses (every
// checkpoint damaged) leaves every file as it was, for a completed and for a failed run. A
// resume that asks for more steps trains on, naming the change, and moves a damaged checkpoint
// it skipped aside so that later commands do not try it again.
TEST_F(RunTest, AFinishedRunsRecordIsLeftAsItIsByResumeByARefusedResumeAndByCommands) {
  const Result done = train({"--set", "steps=20", "--set", "checkpoint_every=5"});
  ASSERT_EQ(done.exit_code, 0) << done.describe();
  const auto finished = training_files(run_dir_.string());

  const Result again = train({"--resume"});
  ASSERT_EQ(again.exit_code, 0) << again.describe();
  EXPECT_TRUE(contains(again.err, "completed (summary.json): nothing to resume")) << again.describe();
  EXPECT_EQ(changed_files(finished, training_files(run_dir_.string())), "") << "--resume of a completed run";
  const Result eval = train({"--resume", "--command", "eval"});
  ASSERT_EQ(eval.exit_code, 0) << eval.describe();
  EXPECT_EQ(changed_files(finished, training_files(run_dir_.string())), "") << "eval";

  auto damage_every_checkpoint = [](const fs::path& run) {
    for (const auto& e : fs::directory_iterator(run / "checkpoints")) write_file(e.path(), "not a checkpoint");
  };
  damage_every_checkpoint(run_dir_);
  const auto damaged = training_files(run_dir_.string());
  const Result refused = train({"--resume", "--set", "steps=30"});
  EXPECT_EQ(refused.exit_code, 2) << refused.describe();
  EXPECT_TRUE(contains(refused.err, "the run's files are as they were")) << refused.describe();
  EXPECT_EQ(changed_files(damaged, training_files(run_dir_.string())), "") << "a refused --resume of a completed run";

  const fs::path failed_run = tmp() / "failed";
  const Result failed = run_toyreg({"--run-dir", failed_run.string(), "--set", "steps=20", "--set", "checkpoint_every=5",
                                    "--set", "fail_at_step=12"});
  ASSERT_NE(failed.exit_code, 0) << failed.describe();
  // The host's lines are in the run's log too: its plan, and the error the terminal ended with.
  const std::string failed_log = read_file(failed_run / "log.txt");
  EXPECT_TRUE(contains(failed_log, "] [info] run folder " + failed_run.string())) << failed_log;
  EXPECT_TRUE(contains(failed_log, "[host] [error] training failed (worker exit status")) << failed_log;
  damage_every_checkpoint(failed_run);
  const auto failed_files = training_files(failed_run.string());
  const Result failed_refused = run_toyreg({"--run-dir", failed_run.string(), "--resume", "--set", "fail_at_step=-1"});
  EXPECT_EQ(failed_refused.exit_code, 2) << failed_refused.describe();
  EXPECT_EQ(changed_files(failed_files, training_files(failed_run.string())), "") << "a refused --resume of a failed run";


  // More steps asked: it trains on from the newest checkpoint that loads, and the damaged
  // newer one is moved aside.
  const fs::path longer = tmp() / "longer";
  ASSERT_EQ(run_toyreg({"--run-dir", longer.string(), "--set", "steps=20", "--set", "checkpoint_every=5"}).exit_code, 0);
  write_file(longer / "checkpoints" / "step-000000020.ckpt", "not a checkpoint");
  const Result more = run_toyreg({"--run-dir", longer.string(), "--resume", "--set", "steps=30"});
  ASSERT_EQ(more.exit_code, 0) << more.describe();
  EXPECT_TRUE(contains(more.err, "trains on with the settings changed: steps 20 -> 30")) << more.describe();
  const std::string log = read_file(longer / "log.txt");
  EXPECT_TRUE(contains(log, "trains on with the settings changed: steps 20 -> 30")) << log;
  EXPECT_TRUE(contains(log, "resumed from step 15")) << log;
  EXPECT_TRUE(contains(log, "step-000000020.ckpt' aside to")) << log;
  EXPECT_TRUE(fs::exists(longer / "checkpoints" / "step-000000020.ckpt.damaged"));
  EXPECT_EQ(file_json(longer / "summary.json")["status"], "completed");
}

// A disk that fills during training (a tmpfs out of inodes, in a mount namespace of its own):
// the checkpoint cannot be written, then neither can the summary. The host says where the
// worker's error is instead of pointing to a summary that is not there.
TEST_F(RunTest, AFullDiskThatKeepsTheSummaryFromBeingWrittenIsReportedWithWhereTheErrorIs) {
  if (::geteuid() != 0 || !fs::exists("/usr/bin/unshare"))
    GTEST_SKIP() << "needs root and unshare(1) to mount a small tmpfs of its own";
  const fs::path disk = tmp() / "disk", run = disk / "run";
  fs::create_directories(disk);
  const std::string script = "mount -t tmpfs -o size=1m,nr_inodes=13 tmpfs '" + disk.string() + "' && exec '" +
                             host_path().string() + "' --plugin-dir '" + toyreg_ +
                             "' --algorithm toyreg --device cpu --no-calibrate --run-dir '" + run.string() +
                             "' --set steps=20 --set checkpoint_every=5 --batch-size 16";
  RunOptions o;
  o.timeout = kRunTimeout;
  const Result r = mlhost::cli_test::run({"/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script}, o);
  if (contains(r.err, "mount:") || contains(r.err, "unshare:")) GTEST_SKIP() << "cannot mount a tmpfs here: " << r.err;
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "No space left on device")) << r.describe();
  EXPECT_TRUE(contains(r.err, "it could not write " + (run / "summary.json").string() + ": its error is in the lines above"))
      << r.describe();
  EXPECT_FALSE(contains(r.err, "see " + (run / "summary.json").string())) << r.describe();
}

// A safetensors file by hand (the format's bytes: u64 header size, JSON header, data), so
// that a test can bring weights of any shape without LibTorch.
void write_safetensors(const fs::path& path, const std::vector<std::pair<std::string, std::vector<int64_t>>>& tensors) {
  json header = json::object();
  int64_t offset = 0;
  for (const auto& [name, shape] : tensors) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    header[name] = {{"dtype", "F32"}, {"shape", shape}, {"data_offsets", {offset, offset + 4 * n}}};
    offset += 4 * n;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::ofstream out(path, std::ios::binary);
  const uint64_t size = text.size();
  out.write(reinterpret_cast<const char*>(&size), 8);
  out << text << std::string(static_cast<size_t>(offset), '\0');
}

// One F32 tensor of a safetensors file, read by hand.
std::vector<float> read_safetensor(const fs::path& path, const std::string& name) {
  std::ifstream in(path, std::ios::binary);
  uint64_t size = 0;
  in.read(reinterpret_cast<char*>(&size), 8);
  std::string text(size, ' ');
  in.read(text.data(), static_cast<std::streamsize>(size));
  const json entry = json::parse(text).at(name);
  const int64_t begin = entry["data_offsets"][0], end = entry["data_offsets"][1];
  std::vector<float> values(static_cast<size_t>(end - begin) / 4);
  in.seekg(static_cast<std::streamoff>(8 + size + begin));
  in.read(reinterpret_cast<char*>(values.data()), end - begin);
  return values;
}

// A run warm-started from another's weights starts where that run ended: its first loss is the
// source's last (a fresh run's is far higher), and the plan and the log say where the weights
// came from. Files that do not fit, and commands that train nothing, are refused by name.
TEST_F(RunTest, InitFromStartsWhereTheSourceRunEnded) {
  const fs::path source = tmp() / "source", fresh = tmp() / "fresh";
  ASSERT_EQ(run_toyreg({"--run-dir", source.string(), "--set", "steps=60"}).exit_code, 0);
  ASSERT_EQ(run_toyreg({"--run-dir", fresh.string(), "--set", "steps=3"}).exit_code, 0);
  for (const fs::path& weights : {source / "model.safetensors", source / "checkpoints" / "best.ckpt"}) {
    const fs::path warm = tmp() / ("warm-" + weights.extension().string().substr(1));
    const Result r = run_toyreg({"--run-dir", warm.string(), "--set", "steps=3", "--init-from", weights.string()});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    EXPECT_TRUE(contains(r.err, "--init-from '" + weights.string() + "'")) << r.describe();
    const double source_last = metric("train/loss", source).back().second;
    const double warm_first = metric("train/loss", warm).front().second;
    const double fresh_first = metric("train/loss", fresh).front().second;
    EXPECT_LT(warm_first, 3 * source_last + 1e-3) << weights;
    EXPECT_GT(fresh_first, 20 * warm_first) << weights;
    const json plan = file_json(warm / "plan.json");
    EXPECT_EQ(plan["init_from"]["path"], weights.string()) << plan.dump(2);
    EXPECT_EQ(plan["source_kinds"]["init_from"], "command_line") << plan.dump(2);
  }

  // A frozen weight does not move (the warm run ends with the source's), the other trains on.
  const Result frozen = run_toyreg({"--run-dir", (tmp() / "frozen").string(), "--set", "steps=5", "--set", "lr=0.5",
                                    "--init-from", (source / "model.safetensors").string(), "--freeze", "weight"});
  ASSERT_EQ(frozen.exit_code, 0) << frozen.describe();
  EXPECT_TRUE(contains(frozen.err, "frozen: 1 parameter ('weight')")) << frozen.describe();
  EXPECT_EQ(read_safetensor(tmp() / "frozen" / "model.safetensors", "weight"),
            read_safetensor(source / "model.safetensors", "weight"));
  EXPECT_NE(read_safetensor(tmp() / "frozen" / "model.safetensors", "bias"),
            read_safetensor(source / "model.safetensors", "bias"));

  const fs::path wrong = tmp() / "wrong.safetensors";
  write_safetensors(wrong, {{"weight", {2, 1}}, {"bias", {1}}});
  // A file that does not fit is bad input (exit 2), and the run folder it was to train in is
  // not used up: the same command with a fitting file then runs there.
  const Result misfit = train({"--init-from", wrong.string()});
  EXPECT_EQ(misfit.exit_code, 2) << misfit.describe();
  EXPECT_TRUE(contains(misfit.out + misfit.err, "tensor 'weight' is [2, 1] in the file, [1, 1] in the model"))
      << misfit.describe();
  EXPECT_TRUE(contains(misfit.err, "nothing was trained, and the run folder is gone again")) << misfit.describe();
  EXPECT_FALSE(fs::exists(run_dir_)) << "a refused --init-from leaves no run folder behind";
  // So it is for every rank of a distributed run, which --max-restarts does not retry.
  const Result ranks =
      train({"--init-from", wrong.string(), "--nproc-per-node", "2", "--batch-size", "16", "--max-restarts", "2"});
  EXPECT_EQ(ranks.exit_code, 2) << ranks.describe();
  EXPECT_TRUE(contains(ranks.err, "tensor 'weight' is [2, 1] in the file")) << ranks.describe();
  EXPECT_FALSE(contains(ranks.err, "restart 1 of 2")) << ranks.describe();
  fs::remove_all(run_dir_);
  const Result refit = train({"--init-from", (source / "model.safetensors").string(), "--set", "steps=2"});
  EXPECT_EQ(refit.exit_code, 0) << refit.describe();

  const Result missing = train({"--init-from", (tmp() / "absent.pt").string()});
  EXPECT_EQ(missing.exit_code, 2) << missing.describe();
  EXPECT_TRUE(contains(missing.err, "--init-from '" + (tmp() / "absent.pt").string() + "': no such file"))
      << missing.describe();
  const Result no_file = train({"--freeze", "weight"});
  EXPECT_EQ(no_file.exit_code, 2) << no_file.describe();
  EXPECT_TRUE(contains(no_file.err, "--freeze needs --init-from")) << no_file.describe();
  const Result unknown = run_toyreg({"--run-dir", (tmp() / "unknown").string(), "--init-from",
                                     (source / "model.safetensors").string(), "--freeze", "encoder"});
  EXPECT_NE(unknown.exit_code, 0) << unknown.describe();
  EXPECT_TRUE(contains(unknown.out + unknown.err, "--freeze 'encoder' names no parameter")) << unknown.describe();
  const Result eval = run_toyreg({"--run-dir", source.string(), "--resume", "--command", "eval", "--init-from",
                                  (source / "model.safetensors").string()});
  EXPECT_EQ(eval.exit_code, 2) << eval.describe();
  EXPECT_TRUE(contains(eval.err, "eval does not train")) << eval.describe();
}

TEST_F(RunTest, BenchmarkPrintsATableOrJson) {
  Result r = run_toyreg({"--benchmark", "--run-dir", (tmp() / "bench").string()});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "Benchmarks on cpu:0")) << r.describe();
  EXPECT_TRUE(contains(r.out, "train_step")) << r.describe();
  EXPECT_TRUE(contains(r.out, "samples/s")) << r.describe();

  EXPECT_TRUE(fs::exists(tmp() / "bench" / "summary.json")) << "--run-dir keeps the benchmark's records";
  // The log holds the table the terminal showed, each line marked as the host's.
  const std::string log = read_file(tmp() / "bench" / "log.txt");
  EXPECT_TRUE(contains(log, "[host] [info] Benchmarks on cpu:0")) << log;
  EXPECT_TRUE(contains(log, "[host] [info]   train_step")) << log;

  // Without --run-dir a command that is not training keeps no run folder for its records
  // alone: the results went to the terminal.
  RunOptions in_empty_folder;
  in_empty_folder.cwd = tmp() / "cwd";
  fs::create_directories(in_empty_folder.cwd);
  r = run_toyreg({"--benchmark"}, in_empty_folder);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "train_step")) << r.describe();
  EXPECT_FALSE(fs::exists(in_empty_folder.cwd / "runs")) << r.describe();
  EXPECT_TRUE(contains(r.err, "benchmark wrote nothing in its run folder, so none is kept")) << r.describe();

  r = run_toyreg({"--benchmark", "--json", "--precision", "bf16", "--run-dir", (tmp() / "bench-json").string()});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const json j = stdout_json(r);
  ASSERT_FALSE(j.is_discarded()) << r.describe();
  EXPECT_EQ(j["precision"], "bf16");
  ASSERT_EQ(j["benchmarks"].size(), 1u) << j.dump(2);
  const json& b = j["benchmarks"][0];
  EXPECT_EQ(b["name"], "train_step");
  EXPECT_GT(b["median_ms"].get<double>(), 0);
  EXPECT_LE(b["p10_ms"].get<double>(), b["median_ms"].get<double>());
  EXPECT_LE(b["median_ms"].get<double>(), b["p90_ms"].get<double>());
  EXPECT_NEAR(b["throughput"].get<double>(), 256 / (b["median_ms"].get<double>() / 1000), 1e-6 * b["throughput"].get<double>());

  r = run_toyreg({"--benchmark", "--command", "train"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
}

// --- the worker and the host's own end --------------------------------------------------------

class WorkerLifetimeTest : public RunTest {
 protected:
  // Starts a long, slow run and waits until it trains.
  std::unique_ptr<Process> start_long_run(int step_delay_ms) {
    RunOptions o;
    o.cwd = tmp();
    auto p = std::make_unique<Process>(
        std::vector<std::string>{host_path().string(), "--plugin-dir", toyreg_, "--algorithm", "toyreg", "--run-dir",
                                 run_dir_.string(), "--set", "steps=100000", "--set",
                                 "step_delay_ms=" + std::to_string(step_delay_ms)},
        o);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
    while (std::chrono::steady_clock::now() < deadline && p->running()) {
      if (metric("train/loss", run_dir_).size() >= 2) return p;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "training did not start" << p->wait(Millis(0)).describe();
    return nullptr;
  }
};

// SIGTERM (what a cluster scheduler, Kubernetes or torchrun sends before it kills) preempts:
// a checkpoint at the next step, summary "preempted" and resumable, exit 75; the same command
// with --resume auto continues from that step to the end.
TEST_F(WorkerLifetimeTest, SigtermPreemptsAndTheSameCommandContinues) {
  auto p = start_long_run(20);
  ASSERT_TRUE(p);
  ASSERT_EQ(::kill(p->pid(), SIGTERM), 0);
  const Result r = p->wait(Millis(20000));
  EXPECT_EQ(r.exit_code, 75) << r.describe();
  EXPECT_TRUE(contains(r.err, "run preempted (SIGTERM): a checkpoint was saved")) << r.describe();
  const json summary = file_json(run_dir_ / "summary.json");
  EXPECT_EQ(summary["status"], "preempted") << summary.dump(2);
  EXPECT_EQ(summary["resumable"], true);
  EXPECT_EQ(summary["stop_signal"], "SIGTERM");
  const size_t trained = metric("train/loss", run_dir_).size();
  ASSERT_GE(trained, 2u);
  const int64_t target = static_cast<int64_t>(trained) + 10;
  const Result resumed = run_toyreg({"--resume", "auto", "--run-dir", run_dir_.string(), "--set",
                                     "steps=" + std::to_string(target), "--set", "step_delay_ms=0"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.describe();
  EXPECT_TRUE(contains(read_file(run_dir_ / "log.txt"), "resumed from step " + std::to_string(trained)))
      << read_file(run_dir_ / "log.txt");
  EXPECT_EQ(file_json(run_dir_ / "summary.json")["status"], "completed");
  EXPECT_EQ(metric("train/loss", run_dir_).size(), static_cast<size_t>(target)) << "no step trained twice";
}

// SLURM's --signal=USR1@120 warns a job before its time limit: --preempt-signal USR1 makes that
// signal preempt as SIGTERM does (without it, USR1 would end the host outright). Ctrl-C still
// cancels (InterruptCancelsAndResumeContinues).
TEST_F(WorkerLifetimeTest, APreemptionSignalOfTheUsersChoicePreempts) {
  RunOptions o;
  o.cwd = tmp();
  Process p({host_path().string(), "--plugin-dir", toyreg_, "--algorithm", "toyreg", "--run-dir", run_dir_.string(),
             "--set", "steps=100000", "--set", "step_delay_ms=20", "--preempt-signal", "USR1"},
            o);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (std::chrono::steady_clock::now() < deadline && p.running() && metric("train/loss", run_dir_).size() < 2)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ(::kill(p.pid(), SIGUSR1), 0);
  const Result r = p.wait(Millis(20000));
  EXPECT_EQ(r.exit_code, 75) << r.describe();
  EXPECT_EQ(file_json(run_dir_ / "summary.json")["stop_signal"], "SIGUSR1");

  const Result bad = run_toyreg({"--run-dir", (tmp() / "x").string(), "--preempt-signal", "KILL"});
  EXPECT_EQ(bad.exit_code, 2) << bad.describe();
  EXPECT_TRUE(contains(bad.err, "--preempt-signal 'KILL' is not a signal")) << bad.describe();
}

TEST_F(WorkerLifetimeTest, SecondCtrlCStopsAtOnceAndIsNotACrash) {
  // The first Ctrl-C asks the worker to stop at its next step (here 3 s away); the second
  // kills it. The user stopped the run: that is a cancellation, not a worker crash.
  auto p = start_long_run(3000);
  ASSERT_TRUE(p);
  ASSERT_EQ(::kill(p->pid(), SIGINT), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_EQ(::kill(p->pid(), SIGINT), 0);
  const auto sent = std::chrono::steady_clock::now();
  const Result r = p->wait(Millis(20000));
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - sent).count();
  EXPECT_LT(ms, 2000) << "the second Ctrl-C did not stop the run at once" << r.describe();
  EXPECT_EQ(r.exit_code, 130) << r.describe();
  const json summary = file_json(run_dir_ / "summary.json");
  EXPECT_EQ(summary["status"], "cancelled") << summary.dump(2);
}

TEST_F(WorkerLifetimeTest, WorkerDoesNotOutliveAKilledHost) {
  // Whatever ends the host (kill -9, a closed terminal), its training worker must not go
  // on alone: nobody supervises it any more, and it holds the machine's CPUs.
  auto p = start_long_run(20);
  ASSERT_TRUE(p);
  ASSERT_EQ(::kill(p->pid(), SIGKILL), 0);
  // Look while the host's output pipes are still open (as a terminal would be): closing
  // them would end a still-running worker by SIGPIPE at its next log line.
  ASSERT_TRUE(p->wait_exit(Millis(10000)));
  const std::vector<std::string> left = wait_for_orphans(Millis(5000));
  EXPECT_TRUE(left.empty()) << "the worker outlived the host: " << ::testing::PrintToString(left);
  kill_orphans();
  const Result r = p->wait(Millis(1000));
  EXPECT_EQ(r.signal, SIGKILL) << r.describe();
}

TEST_F(WorkerLifetimeTest, WorkerDoesNotOutliveAHungUpHost) {
  auto p = start_long_run(20);
  ASSERT_TRUE(p);
  ASSERT_EQ(::kill(p->pid(), SIGHUP), 0);
  ASSERT_TRUE(p->wait_exit(Millis(20000))) << "the host ignored SIGHUP";
  const std::vector<std::string> left = wait_for_orphans(Millis(5000));
  EXPECT_TRUE(left.empty()) << "the worker outlived the host: " << ::testing::PrintToString(left);
  kill_orphans();
  const Result r = p->wait(Millis(1000));
  EXPECT_FALSE(r.timed_out) << r.describe();
}

TEST_F(RunTest, RunDirThatIsAFileIsRefused) {
  write_file(run_dir_, "not a folder\n");
  const Result r = train({"--set", "steps=3"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, run_dir_.string())) << r.describe();
  EXPECT_EQ(read_file(run_dir_), "not a folder\n");
}

}  // namespace
}  // namespace mlhost::cli_test
