// A run planned beside another real run on this machine: the other run's worker is found in
// /proc, the plan keeps its threads (a shared machine lowers throughput, never changes the
// numbers) and lets idle OpenMP threads sleep, a calibration before the run is skipped, and
// one asked for (host --calibrate) measures but, on a machine that busy, does not cache.
// shared_machine_threads = split trades the numbers for throughput: the cores are split.
// The harness plans every other test as on a dedicated machine (MLH_MACHINE_SHARING=dedicated);
// these tests unset it.
#include <signal.h>

#include <chrono>
#include <thread>

#include "cli_harness.hpp"

namespace mlhost::cli_test {
namespace {

constexpr Millis kTimeout{180000};

class SharedMachineTest : public ToyregTest {
 protected:
  void SetUp() override {
    ToyregTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    one_thread_ = tmp() / "one-thread.ini";
    write_file(one_thread_, "intra_op_threads = 1\n");
  }

  // The other run: toyreg on one thread, training until it is stopped.
  std::unique_ptr<Process> start_other_run() {
    RunOptions o;
    o.cwd = tmp();
    o.timeout = kTimeout;
    auto p = std::make_unique<Process>(
        std::vector<std::string>{host_path().string(), "--plugin-dir", toyreg_, "--algorithm", "toyreg", "--run-dir",
                                 (tmp() / "other").string(), "--hardware-config", one_thread_.string(), "--set",
                                 "steps=100000000", "--set", "samples=4096", "--set", "checkpoint_every=100000000"},
        o);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (p->running() && !fs::exists(tmp() / "other" / "metrics.jsonl") && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(Millis(20));
    EXPECT_TRUE(p->running()) << "the other run ended early";
    return p;
  }

  // Stops it as a user would (SIGTERM: it saves and exits), so that nothing is left running.
  static void stop(Process& other) {
    ::kill(other.pid(), SIGTERM);
    const Result r = other.wait(Millis(60000));
    EXPECT_NE(r.signal, SIGKILL) << r.describe();
  }

  // Planning as users get it: the machine looked at.
  RunOptions looking(RunOptions o = {}) const {
    o.timeout = kTimeout;
    o.unset_env.push_back("MLH_MACHINE_SHARING");
    return o;
  }

  Result short_run(const std::string& name, const RunOptions& o) {
    return host({"--plugin-dir", toyreg_, "--algorithm", "toyreg", "--run-dir", (tmp() / name).string(), "--set",
                 "steps=5"},
                o);
  }

  fs::path one_thread_;
};

// Other tests may run beside this one (ctest -j2), with workers of their own: whatever they
// are, a run beside the other run started here keeps its threads and its numbers.
TEST_F(SharedMachineTest, ARunBesideAnotherKeepsItsThreadsAndNumbersAndSleepsWhenIdle) {
  // Told the machine is its own, a run plans every core and the OpenMP runtime's waits.
  RunOptions dedicated = looking();
  dedicated.env["MLH_MACHINE_SHARING"] = "dedicated";
  ASSERT_EQ(short_run("dedicated", dedicated).exit_code, 0);
  const json dedicated_plan = file_json(tmp() / "dedicated" / "plan.json");
  EXPECT_TRUE(dedicated_plan["omp_wait_policy"].is_null()) << dedicated_plan.dump(2);
  const int cores = dedicated_plan["threads"]["intra_op"];

  const auto other = start_other_run();
  const Result beside = short_run("beside", looking());
  ASSERT_EQ(beside.exit_code, 0) << beside.describe();
  const json plan = file_json(tmp() / "beside" / "plan.json");
  EXPECT_EQ(plan["omp_wait_policy"], "passive") << plan.dump(2);
  EXPECT_TRUE(contains(str(plan["sources"]["omp_wait_policy"]), "shared machine (")) << plan["sources"].dump(2);
  EXPECT_TRUE(contains(str(plan["sources"]["omp_wait_policy"]), " of other runs (")) << plan["sources"].dump(2);
  EXPECT_EQ(plan["threads"], dedicated_plan["threads"]) << plan["sources"].dump(2);
  // The worker really runs with them, and computes what the run on a machine of its own did.
  EXPECT_TRUE(contains(read_file(tmp() / "beside" / "log.txt"), "torch intra-op threads: " + std::to_string(cores)));
  json a = file_json(tmp() / "dedicated" / "summary.json")["result"];
  json b = file_json(tmp() / "beside" / "summary.json")["result"];
  for (json* r : {&a, &b}) r->at("plan_applied").erase("omp_wait_policy");  // the one difference asked for
  EXPECT_EQ(a, b);
  EXPECT_EQ(read_file(tmp() / "dedicated" / "model.safetensors"), read_file(tmp() / "beside" / "model.safetensors"));

  // Asked to split, it leaves the other run its core.
  write_file(tmp() / "split.ini", "shared_machine_threads = split\n");
  RunOptions splitting = looking();
  splitting.env["MLH_HARDWARE_CONFIG"] = (tmp() / "split.ini").string();
  ASSERT_EQ(short_run("split", splitting).exit_code, 0);
  const json split_plan = file_json(tmp() / "split" / "plan.json");
  EXPECT_LE(split_plan["threads"]["intra_op"].get<int>(), std::max(1, cores - 1)) << split_plan.dump(2);
  if (cores > 1) {
    EXPECT_TRUE(contains(str(split_plan["sources"]["threads"]), "on a shared machine")) << split_plan["sources"].dump(2);
  }

  RunOptions bad = looking();
  bad.env["MLH_MACHINE_SHARING"] = "sometimes";
  const Result refused = short_run("bad", bad);
  EXPECT_EQ(refused.exit_code, 2) << refused.describe();
  EXPECT_TRUE(contains(refused.err, "MLH_MACHINE_SHARING='sometimes': expected auto or dedicated")) << refused.err;
  EXPECT_FALSE(fs::exists(tmp() / "bad"));
  stop(*other);
}

// Two runs started in the same moment with shared_machine_threads = split: neither's worker
// exists when the other plans, so the machine's run registry is what they see of each other.
// Together they plan the cores, no more (on two cores: one thread each, where each alone
// would take both).
TEST_F(SharedMachineTest, TwoRunsStartedTogetherSplitTheCoresWhenAskedTo) {
  RunOptions dedicated = looking();
  dedicated.env["MLH_MACHINE_SHARING"] = "dedicated";
  ASSERT_EQ(short_run("alone", dedicated).exit_code, 0);
  const int cores = file_json(tmp() / "alone" / "plan.json")["threads"]["intra_op"];
  if (cores < 2) GTEST_SKIP() << "one core: two runs cannot split it";

  write_file(tmp() / "split.ini", "shared_machine_threads = split\n");
  RunOptions o = looking();
  o.cwd = tmp();
  o.env["MLH_RUN_REGISTRY_DIR"] = (tmp() / "registry").string();  // this test's runs alone
  o.env["MLH_HARDWARE_CONFIG"] = (tmp() / "split.ini").string();
  auto start = [&](const std::string& name) {
    return std::make_unique<Process>(
        std::vector<std::string>{host_path().string(), "--plugin-dir", toyreg_, "--algorithm", "toyreg", "--run-dir",
                                 (tmp() / name).string(), "--set", "steps=5"},
        o);
  };
  auto first = start("first");
  auto second = start("second");
  const Result a = first->wait(kTimeout), b = second->wait(kTimeout);
  ASSERT_EQ(a.exit_code, 0) << a.describe();
  ASSERT_EQ(b.exit_code, 0) << b.describe();
  const json plan_a = file_json(tmp() / "first" / "plan.json"), plan_b = file_json(tmp() / "second" / "plan.json");
  const int threads_a = plan_a["threads"]["intra_op"], threads_b = plan_b["threads"]["intra_op"];
  EXPECT_EQ(threads_a + threads_b, cores) << plan_a["sources"]["threads"] << "\n" << plan_b["sources"]["threads"];
  EXPECT_TRUE(contains(str(plan_a["sources"]["threads"]) + str(plan_b["sources"]["threads"]), "on a shared machine"));
  // Each left the registry as it ended.
  EXPECT_TRUE(fs::is_empty(tmp() / "registry") ||
              (std::distance(fs::directory_iterator(tmp() / "registry"), fs::directory_iterator()) == 1 &&
               fs::exists(tmp() / "registry" / ".lock")));
}

TEST_F(SharedMachineTest, CalibrationWaitsForAQuietMachineAndDoesNotCacheABusyOne) {
  const auto other = start_other_run();
  RunOptions o = looking();
  o.unset_env.push_back("MLH_NO_CALIBRATE");
  o.env["XDG_CACHE_HOME"] = (tmp() / "cache").string();
  const fs::path cache = tmp() / "cache" / "mlhost" / "calibration.json";

  // A run that would calibrate first does not, and says why.
  const Result run = short_run("run", o);
  ASSERT_EQ(run.exit_code, 0) << run.describe();
  const std::string status = file_json(tmp() / "run" / "plan.json")["calibration"]["status"];
  EXPECT_EQ(status.rfind("not calibrated: the machine is shared (", 0), 0u) << status;
  EXPECT_TRUE(contains(status, " of other runs (")) << status;
  // --print-plan says what such a run does, not that it would calibrate first.
  const Result shown = host({"--plugin-dir", toyreg_, "--print-plan", "--algorithm", "toyreg"}, o);
  ASSERT_EQ(shown.exit_code, 0) << shown.describe();
  EXPECT_TRUE(contains(shown.out, "not calibrated: the machine is shared (")) << shown.out;
  EXPECT_FALSE(contains(shown.out, "a run calibrates first")) << shown.out;

  // Asked for, it measures; with the other run keeping a CPU busy, nothing is cached.
  const Result calibrated = host({"--plugin-dir", toyreg_, "--calibrate", "--algorithm", "toyreg",
                                  "--calibration-seconds", "20"},
                                 o);
  ASSERT_EQ(calibrated.exit_code, 0) << calibrated.describe();
  EXPECT_TRUE(contains(calibrated.out, "on a busy machine (other processes kept ")) << calibrated.out;
  EXPECT_TRUE(contains(calibrated.out, "used for this run, not cached")) << calibrated.out;
  const json cached = fs::exists(cache) ? file_json(cache) : json();
  EXPECT_TRUE(cached.is_null() || cached.value("calibrations", json::array()).empty()) << cached.dump(2);
  stop(*other);
}

// A resumed run is the same run: its threads (which change its numbers) are its first launch's,
// however busy the machine is now; only the command line changes them, with a warning.
TEST_F(SharedMachineTest, AResumedRunKeepsItsThreadsWhenTheMachineIsBusierNow) {
  RunOptions dedicated = looking();
  dedicated.env["MLH_MACHINE_SHARING"] = "dedicated";
  const std::string run = (tmp() / "kept").string();
  const std::vector<std::string> toyreg = {"--plugin-dir", toyreg_, "--algorithm", "toyreg", "--run-dir", run};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> args = toyreg;
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  ASSERT_EQ(host(with({"--set", "steps=6", "--max-steps", "2"}), dedicated).exit_code, 0);
  const int cores = file_json(fs::path(run) / "plan.json")["threads"]["intra_op"];

  const auto other = start_other_run();
  const Result resumed = host(with({"--resume"}), looking());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.describe();
  const json plan = file_json(fs::path(run) / "plan.json");
  EXPECT_EQ(plan["threads"]["intra_op"], cores) << plan.dump(2);
  EXPECT_EQ(plan["source_kinds"]["threads"], "trained_run") << plan["sources"].dump(2);
  EXPECT_TRUE(contains(str(plan["sources"]["threads"]), "a resumed run keeps the values that change its numbers"))
      << plan["sources"].dump(2);
  EXPECT_EQ(plan["source_kinds"]["precision"], "trained_run") << plan["sources"].dump(2);
  EXPECT_TRUE(contains(read_file(fs::path(run) / "log.txt"), "torch intra-op threads: " + std::to_string(cores)));
  // And it ends as the same run uninterrupted on a machine of its own does.
  const std::string straight = (tmp() / "straight").string();
  ASSERT_EQ(host({"--plugin-dir", toyreg_, "--algorithm", "toyreg", "--run-dir", straight, "--set", "steps=6"}, dedicated)
                .exit_code,
            0);
  json resumed_result = file_json(fs::path(run) / "summary.json")["result"];
  json straight_result = file_json(fs::path(straight) / "summary.json")["result"];
  for (json* r : {&resumed_result, &straight_result}) r->at("plan_applied").erase("omp_wait_policy");
  EXPECT_EQ(resumed_result, straight_result);
  EXPECT_EQ(read_file(fs::path(run) / "model.safetensors"), read_file(fs::path(straight) / "model.safetensors"));

  // The command line wins, and says what that costs.
  if (cores > 1) {
    const Result changed = host(with({"--resume", "--set", "steps=8", "--threads", "1"}), looking());
    ASSERT_EQ(changed.exit_code, 0) << changed.describe();
    EXPECT_TRUE(contains(changed.err, "threads " + std::to_string(cores) +
                                          " -> 1 on the command line: this resumed run's results will differ from an "
                                          "uninterrupted run's"))
        << changed.err;
    EXPECT_EQ(file_json(fs::path(run) / "plan.json")["threads"]["intra_op"], 1);
  }
  stop(*other);
}

}  // namespace
}  // namespace mlhost::cli_test
