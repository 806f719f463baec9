// Distributed data-parallel runs of the real host with the toyreg plugin on two CPU ranks
// joined through c10d (TCPStore rendezvous, Gloo): the ranks stay identical and match one
// process on the global batch; torchrun's environment starts one rank per host process;
// a rank that crashes, fails or is killed ends the whole run with its rank named and nothing
// left running; Ctrl-C stops every rank at the same step; a distributed run resumes.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <thread>

#include "cli_harness.hpp"
#include "free_port.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace mlhost::cli_test {
namespace {

constexpr Millis kRunTimeout{240000};

int free_port() { return free_loopback_port_for_test(); }

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

class DistributedTest : public ToyregTest {
 protected:
  // What torchrun gives rank `rank` of 2 on this machine, meeting at 127.0.0.1:port.
  RunOptions torchrun_rank(int rank, const std::string& port) {
    RunOptions o;
    o.cwd = tmp();
    o.env = {{"RANK", std::to_string(rank)}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", std::to_string(rank)},
             {"LOCAL_WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", port}};
    return o;
  }

  std::vector<std::string> toyreg_args(const fs::path& run_dir, const std::vector<std::string>& extra) {
    std::vector<std::string> args{host_path().string(), "--plugin-dir", toyreg_, "--algorithm", "toyreg",
                                  "--run-dir", run_dir.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  Result run_toyreg(const fs::path& run_dir, const std::vector<std::string>& extra) {
    std::vector<std::string> args = toyreg_args(run_dir, extra);
    args.erase(args.begin());
    RunOptions o;
    o.timeout = kRunTimeout;
    return host(args, o);
  }

  std::vector<double> losses(const fs::path& dir) {
    std::vector<double> out;
    for (const json& m : read_jsonl(dir / "metrics.jsonl"))
      if (m.value("name", "") == "train/loss") out.push_back(m["value"].get<double>());
    return out;
  }

  // Waits until rank 0 has logged `n` losses in `dir`; false when the process ended first.
  bool wait_for_steps(Process& p, const fs::path& dir, size_t n) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < deadline && p.running()) {
      if (losses(dir).size() >= n) return true;
      std::this_thread::sleep_for(Millis(50));
    }
    return false;
  }
};

// What a 30-step toyreg run ends with: its weights as every rank reports them.
struct Weights {
  double w = NAN, b = NAN;
};

Weights weights_of(const fs::path& summary_file) {
  const json s = file_json(summary_file);
  if (s.is_discarded() || !s["result"].is_object()) return {};
  return {s["result"]["w"].get<double>(), s["result"]["b"].get<double>()};
}

TEST_F(DistributedTest, TwoRanksStayIdenticalAndMatchOneProcessOnTheGlobalBatch) {
  const fs::path two = tmp() / "two", one = tmp() / "one";
  const std::vector<std::string> common{"--set", "steps=30", "--set", "samples=256", "--set", "checkpoint_every=10",
                                        "--set", "lr=0.05"};
  std::vector<std::string> dist = common, single = common;
  for (const char* a : {"--nproc-per-node", "2", "--batch-size", "16"}) dist.push_back(a);
  for (const char* a : {"--batch-size", "32"}) single.push_back(a);
  const Result r2 = run_toyreg(two, dist);
  ASSERT_EQ(r2.exit_code, 0) << r2.describe();
  const Result r1 = run_toyreg(one, single);
  ASSERT_EQ(r1.exit_code, 0) << r1.describe();

  // Both ranks end with the very same parameters (they apply the same averaged gradients).
  const Weights rank0 = weights_of(two / "summary.json"), rank1 = weights_of(two / "ranks" / "1" / "summary.json");
  ASSERT_FALSE(std::isnan(rank0.w) || std::isnan(rank1.w)) << r2.describe();
  EXPECT_EQ(rank0.w, rank1.w);
  EXPECT_EQ(rank0.b, rank1.b);
  // ... and the parameters of one process trained on both halves of every global batch.
  const Weights single_w = weights_of(one / "summary.json");
  EXPECT_NEAR(rank0.w, single_w.w, 1e-5);
  EXPECT_NEAR(rank0.b, single_w.b, 1e-5);
  // Training moved them well away from the start, so agreement is not trivial.
  EXPECT_GT(std::abs(rank0.w), 1.0);

  const json summary = file_json(two / "summary.json");
  EXPECT_EQ(summary["status"], "completed") << summary.dump(2);
  EXPECT_EQ(summary["result"]["world_size"], 2);
  EXPECT_EQ(summary["result"]["backend"], "gloo");
  EXPECT_EQ(file_json(two / "ranks" / "1" / "summary.json")["result"]["rank"], 1);

  // The plan: per-rank batch, the global batch, and the machine's cores split between ranks.
  const json plan = file_json(two / "plan.json");
  ASSERT_TRUE(plan["distributed"].is_object()) << plan.dump(2);
  EXPECT_EQ(plan["distributed"]["world_size"], 2);
  EXPECT_EQ(plan["distributed"]["global_batch_size"], 32);
  EXPECT_EQ(plan["batch_size"], 16);
  EXPECT_EQ(plan["distributed"]["ranks"].size(), 2u) << plan.dump(2);
  const int all_cores = file_json(one / "plan.json")["threads"]["intra_op"];
  EXPECT_EQ(plan["threads"]["intra_op"], std::max(1, all_cores / 2)) << plan.dump(2);
  EXPECT_EQ(summary["result"]["torch_threads"], plan["threads"]["intra_op"]);

  // Rank 0 alone writes checkpoints and the run's metrics; rank 1 keeps its own log.
  EXPECT_TRUE(fs::is_regular_file(two / "checkpoints" / "step-000000030.ckpt"));
  EXPECT_FALSE(fs::exists(two / "ranks" / "1" / "checkpoints"));
  EXPECT_EQ(losses(two).size(), 30u);
  EXPECT_TRUE(fs::is_regular_file(two / "ranks" / "1" / "log.txt"));
  EXPECT_TRUE(fs::is_regular_file(two / "model.safetensors"));
  EXPECT_TRUE(contains(r2.err, "starting ranks 0-1 of 2")) << r2.describe();
}

TEST_F(DistributedTest, TorchrunEnvironmentMakesEachHostOneRank) {
  const fs::path dir = tmp() / "run", one = tmp() / "one";
  const std::string port = std::to_string(free_port());
  std::vector<std::unique_ptr<Process>> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    const RunOptions o = torchrun_rank(rank, port);
    // Rank 1 starts first: it must wait for rank 0 to make the run folder, not race it.
    ranks.insert(ranks.begin(), std::make_unique<Process>(
                                    toyreg_args(dir, {"--set", "steps=30", "--set", "lr=0.05", "--batch-size", "16"}), o));
    if (rank == 0) std::this_thread::sleep_for(Millis(300));
  }
  const Result r1 = ranks[0]->wait(kRunTimeout), r0 = ranks[1]->wait(kRunTimeout);
  ASSERT_EQ(r0.exit_code, 0) << r0.describe();
  ASSERT_EQ(r1.exit_code, 0) << r1.describe();
  const Result single = run_toyreg(one, {"--set", "steps=30", "--set", "lr=0.05", "--batch-size", "32"});
  ASSERT_EQ(single.exit_code, 0) << single.describe();

  const Weights w0 = weights_of(dir / "summary.json"), w1 = weights_of(dir / "ranks" / "1" / "summary.json");
  EXPECT_EQ(w0.w, w1.w);
  EXPECT_EQ(w0.b, w1.b);
  EXPECT_NEAR(w0.w, weights_of(one / "summary.json").w, 1e-5);
  const json plan = file_json(dir / "plan.json");
  EXPECT_EQ(plan["distributed"]["source"], "torchrun environment") << plan.dump(2);
  EXPECT_EQ(plan["distributed"]["world_size"], 2);
  EXPECT_EQ(plan["distributed"]["master"], "127.0.0.1:" + port);
}

// A plugin whose runtime was built without Gloo's headers (toyreg-nogloo: the runtime's Gloo
// part compiled as where they are missing) trains as one process; a CPU run of several ranks
// of it is refused when the host plans it, with the package named and no run folder made,
// whether our launcher starts the ranks or torchrun's environment makes the host one rank.
TEST_F(DistributedTest, ARuntimeWithoutGlooTrainsAloneAndIsRefusedSeveralCpuRanksNamingThePackage) {
  REQUIRE_CASE("toyreg-nogloo");
  const std::string plugin = case_dir("toyreg-nogloo").string();
  const auto args = [&](const fs::path& run_dir, std::vector<std::string> extra) {
    std::vector<std::string> a{"--plugin-dir", plugin, "--algorithm", "toyreg-nogloo", "--device", "cpu",
                               "--run-dir", run_dir.string(), "--set", "steps=5"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  RunOptions o;
  o.timeout = kRunTimeout;
  const fs::path one = tmp() / "one", two = tmp() / "two", rank = tmp() / "rank";
  const Result alone = host(args(one, {}), o);
  ASSERT_EQ(alone.exit_code, 0) << alone.describe();
  EXPECT_EQ(file_json(one / "summary.json")["status"], "completed");

  const Result launched = host(args(two, {"--nproc-per-node", "2"}), o);
  EXPECT_EQ(launched.exit_code, 2) << launched.describe();
  EXPECT_TRUE(contains(launched.err, "2 ranks on cpu:0")) << launched.describe();
  EXPECT_TRUE(contains(launched.err, "built without (")) << launched.describe();
  EXPECT_TRUE(contains(launched.err, "apt-get install libgloo-dev")) << launched.describe();
  EXPECT_FALSE(fs::exists(two)) << launched.describe();

  RunOptions as_rank = torchrun_rank(0, std::to_string(free_port()));
  as_rank.timeout = kRunTimeout;
  const Result torchrun_style = host(args(rank, {}), as_rank);
  EXPECT_EQ(torchrun_style.exit_code, 2) << torchrun_style.describe();
  EXPECT_TRUE(contains(torchrun_style.err, "libgloo-dev")) << torchrun_style.describe();
  EXPECT_FALSE(fs::exists(rank)) << torchrun_style.describe();
}

// The real torchrun of PyTorch 2.x (.venv/bin/torchrun, made by scripts/torch-venv.sh; or
// MLH_TORCHRUN) starting the host as its workers, in each of its two ways of meeting: its agent
// serving the c10d store the workers join (TORCHELASTIC_USE_AGENT_STORE=True, the default),
// and the workers' rank 0 serving one (TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 with the c10d
// rendezvous). Each run must match our own launcher's result on the same global batch. A
// LibTorch 1.x worker cannot speak a 2.x agent's store protocol (the connection is reset):
// there the agent-store launches must fail with the advice to use the other mode.
constexpr Millis kTorchrunTimeout{150000};

class TorchrunTest : public DistributedTest {
 protected:
  void SetUp() override {
    DistributedTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    const char* named = std::getenv("MLH_TORCHRUN");
    torchrun_ = named && *named ? named : MLH_CLI_TORCHRUN;
    if (::access(torchrun_.c_str(), X_OK) != 0)
      GTEST_SKIP() << "no torchrun at " << torchrun_
                   << " (bash scripts/torch-venv.sh --peers installs PyTorch's into .venv/; MLH_TORCHRUN names another)";
    const Result listed = host({"--plugin-dir", toyreg_, "--list-plugins", "--json"});
    for (const json& p : stdout_json(listed).value("plugins", json::array()))
      if (p.value("name", "") == "toyreg") torch_major_ = std::stoi(p["build"]["torch"]["version"].get<std::string>());
  }

  // torchrun `launch` ... --no-python host (toyreg, 30 steps, 16 a rank), with the default
  // --dist-timeout (300 s): a 1.x worker must give up on the agent's store well before it.
  std::vector<std::string> torchrun_args(const std::vector<std::string>& launch, const fs::path& run_dir,
                                         bool /*agent_store*/) {
    std::vector<std::string> args{torchrun_};
    args.insert(args.end(), launch.begin(), launch.end());
    args.push_back("--no-python");
    std::vector<std::string> run{"--set", "steps=30", "--set", "lr=0.05", "--batch-size", "16"};
    for (const std::string& a : toyreg_args(run_dir, run)) args.push_back(a);
    return args;
  }

  // Both ranks finished with the same weights, equal to one process on the global batch, and
  // met at `store` ("torchrun agent" or "rank 0": Distributed::store()).
  void expect_matches_one_process(const fs::path& dir, const std::string& what, const std::string& store) {
    const fs::path one = tmp() / "one";
    if (!fs::exists(one / "summary.json")) {
      const Result single = run_toyreg(one, {"--set", "steps=30", "--set", "lr=0.05", "--batch-size", "32"});
      ASSERT_EQ(single.exit_code, 0) << single.describe();
    }
    const Weights w0 = weights_of(dir / "summary.json"), w1 = weights_of(dir / "ranks" / "1" / "summary.json");
    EXPECT_EQ(w0.w, w1.w) << what;
    EXPECT_EQ(w0.b, w1.b) << what;
    EXPECT_NEAR(w0.w, weights_of(one / "summary.json").w, 1e-5) << what;
    const json plan = file_json(dir / "plan.json");
    EXPECT_EQ(plan["distributed"]["source"], "torchrun environment") << what << ": " << plan.dump(2);
    EXPECT_EQ(plan["distributed"]["world_size"], 2) << what;
    EXPECT_EQ(file_json(dir / "summary.json")["result"]["store"], store) << what;
    EXPECT_EQ(file_json(dir / "ranks" / "1" / "summary.json")["result"]["store"], store) << what;
  }

  // With the agent's store (torchrun's default, and --master-port's static rendezvous always):
  // completes with either LibTorch, well within the --dist-timeout.
  void expect_agent_store_outcome(const std::vector<Result>& results, const fs::path& dir, const std::string& what,
                                  double seconds) {
    EXPECT_LT(seconds, 120) << what;
    for (const Result& r : results) ASSERT_EQ(r.exit_code, 0) << what << "\n" << r.describe();
    // LibTorch 1.x does not speak a 2.x agent's store: its ranks meet at rank 0's own store,
    // on the port after the agent's.
    expect_matches_one_process(dir, what, torch_major_ >= 2 ? "torchrun agent" : "rank 0, beside torchrun's agent");
  }

  std::string torchrun_;
  int torch_major_ = 0;
};

TEST_F(TorchrunTest, OneNodeWithTheAgentsStore) {
  const fs::path dir = tmp() / "run";
  RunOptions o;
  o.timeout = kTorchrunTimeout;
  const std::string port = std::to_string(free_port());
  const auto start = std::chrono::steady_clock::now();
  const Result r =
      Process(torchrun_args({"--nproc-per-node", "2", "--master-addr", "127.0.0.1", "--master-port", port}, dir, true), o)
          .wait(kTorchrunTimeout);
  EXPECT_FALSE(contains(r.err + r.out, "Address already in use")) << r.describe();
  expect_agent_store_outcome({r}, dir, "torchrun --nproc-per-node 2", seconds_since(start));
}

TEST_F(TorchrunTest, TwoAgentsOnLoopbackWithEitherStore) {
  for (const bool share : {false, true}) {
    const fs::path dir = tmp() / (share ? "shared" : "own");
    RunOptions o;
    o.timeout = kTorchrunTimeout;
    // Without sharing, the agents meet at the rendezvous endpoint and the workers at a port of
    // their own that torchrun picks (MASTER_PORT), which rank 0 serves.
    if (!share) o.env["TORCH_DISABLE_SHARE_RDZV_TCP_STORE"] = "1";
    const std::vector<std::string> launch{"--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "c10d",
                                          "--rdzv-endpoint", "127.0.0.1:" + std::to_string(free_port()),
                                          "--rdzv-id", share ? "shared" : "own"};
    const auto start = std::chrono::steady_clock::now();
    Process first(torchrun_args(launch, dir, share), o), second(torchrun_args(launch, dir, share), o);
    const Result r0 = first.wait(kTorchrunTimeout), r1 = second.wait(kTorchrunTimeout);
    if (share) {
      expect_agent_store_outcome({r0, r1}, dir, "two agents, the agents' store", seconds_since(start));
    } else {
      ASSERT_EQ(r0.exit_code, 0) << r0.describe();
      ASSERT_EQ(r1.exit_code, 0) << r1.describe();
      expect_matches_one_process(dir, "two agents, rank 0's store", "rank 0");
    }
  }
}

// torchrun --max-restarts: rank 1 fails at step 15 once; torchrun starts both workers again,
// and the same command (--resume auto) continues from the step-10 checkpoint to the result of
// an uninterrupted run. Rank 0's store (TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1), which both
// builds speak.
TEST_F(TorchrunTest, ARestartedLaunchResumesFromTheLastCheckpoint) {
  const fs::path dir = tmp() / "run";
  RunOptions o;
  o.timeout = kTorchrunTimeout;
  o.env["TORCH_DISABLE_SHARE_RDZV_TCP_STORE"] = "1";
  std::vector<std::string> args = torchrun_args({"--nnodes", "1", "--nproc-per-node", "2", "--max-restarts", "1",
                                                 "--rdzv-backend", "c10d", "--rdzv-endpoint",
                                                 "127.0.0.1:" + std::to_string(free_port()), "--rdzv-id", "restart"},
                                                dir, false);
  for (const char* a : {"--resume", "auto", "--set", "checkpoint_every=10", "--set", "fail_at_step=15", "--set",
                        "fault_rank=1", "--set", "fault_once=true"})
    args.push_back(a);
  const Result r = Process(args, o).wait(kTorchrunTimeout);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(read_file(dir / "log.txt"), "from step 10")) << read_file(dir / "log.txt");
  EXPECT_EQ(file_json(dir / "summary.json")["status"], "completed");
  expect_matches_one_process(dir, "torchrun --max-restarts 1", "rank 0");
}

TEST_F(DistributedTest, ACrashingRankEndsTheRunNamingItAndLeavesNoProcess) {
  const fs::path dir = tmp() / "run";
  const auto start = std::chrono::steady_clock::now();
  const Result r = run_toyreg(dir, {"--nproc-per-node", "2", "--batch-size", "16", "--set", "steps=100000",
                                    "--set", "step_delay_ms=10", "--set", "crash_at_step=20", "--set", "fault_rank=1"});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "rank 1 was killed by signal 11")) << r.describe();
  EXPECT_LT(seconds, 60) << "the run should end at once, not when a collective times out";
  EXPECT_TRUE(wait_for_orphans(Millis(5000)).empty());
  const json summary = file_json(dir / "summary.json");
  EXPECT_EQ(summary["status"], "failed") << summary.dump(2);
  EXPECT_EQ(summary["failed_rank"], 1) << summary.dump(2);
  // What rank 0 wrote before is kept.
  EXPECT_GE(losses(dir).size(), 10u);
}

TEST_F(DistributedTest, AFailingRankReportsItsError) {
  const Result r = run_toyreg(tmp() / "run", {"--nproc-per-node", "2", "--batch-size", "16", "--set", "steps=100",
                                              "--set", "fail_at_step=5", "--set", "fault_rank=1"});
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "rank 1 failed: internal error: failing on purpose at step 5")) << r.describe();
  EXPECT_TRUE(wait_for_orphans(Millis(5000)).empty());
}

TEST_F(DistributedTest, ARankThatDoesNotNoticeIsKilledAfterTheOthersFail) {
  // Rank 0 sleeps outside any collective when rank 1 crashes: it would never learn of it.
  const auto start = std::chrono::steady_clock::now();
  const Result r = run_toyreg(tmp() / "run", {"--nproc-per-node", "2", "--batch-size", "16", "--set", "steps=100",
                                              "--set", "crash_at_step=5", "--set", "fault_rank=1", "--set",
                                              "hang_at_step=5", "--set", "hang_rank=0"});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "rank 1 was killed by signal 11")) << r.describe();
  EXPECT_TRUE(contains(r.err, "stopped the other ranks here (0)")) << r.describe();
  EXPECT_LT(seconds, 30);
  EXPECT_TRUE(wait_for_orphans(Millis(5000)).empty());
}

TEST_F(DistributedTest, AKilledWorkerEndsTheRunWithinTheTimeout) {
  const fs::path dir = tmp() / "run";
  RunOptions o;
  o.cwd = tmp();
  Process p(toyreg_args(dir, {"--nproc-per-node", "2", "--batch-size", "16", "--set", "steps=100000", "--set",
                              "step_delay_ms=10", "--set", "checkpoint_every=1000000"}),
            o);
  ASSERT_TRUE(wait_for_steps(p, dir, 10)) << p.wait(Millis(0)).describe();
  const pid_t rank1 = worker_of_rank(p.pid(), 1);
  ASSERT_GT(rank1, 0) << "no worker with RANK=1 under the host";
  ASSERT_EQ(::kill(rank1, SIGKILL), 0);
  const auto sent = std::chrono::steady_clock::now();
  const Result r = p.wait(Millis(60000));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "rank 1 was killed by signal 9")) << r.describe();
  EXPECT_LT(seconds, 30);
  EXPECT_TRUE(wait_for_orphans(Millis(5000)).empty());
}

TEST_F(DistributedTest, ALostPeerEndsATorchrunRankWithAClearError) {
  // Launched by an external launcher, no host sees both ranks: the survivor learns from c10d.
  const fs::path dir = tmp() / "run";
  const std::string port = std::to_string(free_port());
  std::vector<std::unique_ptr<Process>> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    const RunOptions o = torchrun_rank(rank, port);
    ranks.push_back(std::make_unique<Process>(
        toyreg_args(dir, {"--batch-size", "16", "--set", "steps=100000", "--set", "step_delay_ms=10", "--set",
                          "checkpoint_every=1000000", "--dist-timeout", "20"}),
        o));
  }
  ASSERT_TRUE(wait_for_steps(*ranks[0], dir, 10)) << ranks[0]->wait(Millis(0)).describe();
  ASSERT_EQ(::kill(ranks[1]->pid(), SIGKILL), 0);  // the host of rank 1, and with it its worker
  const auto sent = std::chrono::steady_clock::now();
  const Result r0 = ranks[0]->wait(Millis(90000));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  EXPECT_EQ(r0.exit_code, 1) << r0.describe();
  EXPECT_TRUE(contains(r0.err, "distributed rank 0 of 2")) << r0.describe();
  EXPECT_LT(seconds, 45) << "rank 0 should fail within the 20 s timeout";
  EXPECT_TRUE(wait_for_orphans(Millis(5000)).empty());
}

TEST_F(DistributedTest, CtrlCStopsEveryRankAtTheSameStepAndResumeFinishesTheRun) {
  const fs::path dir = tmp() / "run", straight = tmp() / "straight";
  const std::vector<std::string> args{"--nproc-per-node", "2", "--batch-size", "16", "--set", "steps=400", "--set",
                                      "step_delay_ms=15", "--set", "checkpoint_every=1000000", "--set", "lr=0.02"};
  RunOptions o;
  o.cwd = tmp();
  Process p(toyreg_args(dir, args), o);
  ASSERT_TRUE(wait_for_steps(p, dir, 20)) << p.wait(Millis(0)).describe();
  ASSERT_EQ(::kill(p.pid(), SIGINT), 0);
  const Result r = p.wait(Millis(30000));
  ASSERT_EQ(r.exit_code, 130) << r.describe();
  EXPECT_EQ(file_json(dir / "summary.json")["status"], "cancelled");
  EXPECT_EQ(file_json(dir / "ranks" / "1" / "summary.json")["status"], "cancelled");
  EXPECT_TRUE(wait_for_orphans(Millis(5000)).empty());
  // One checkpoint, written by rank 0 at the step both ranks agreed on.
  std::vector<std::string> checkpoints;
  for (const auto& e : fs::directory_iterator(dir / "checkpoints"))
    if (e.path().filename().string().rfind("step-", 0) == 0) checkpoints.push_back(e.path().filename().string());
  ASSERT_EQ(checkpoints.size(), 1u);
  const size_t stopped_at = losses(dir).size();
  EXPECT_LT(stopped_at, 400u);

  const Result resumed = run_toyreg(dir, {"--resume", "--nproc-per-node", "2", "--batch-size", "16"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.describe();
  EXPECT_TRUE(contains(read_file(dir / "ranks" / "1" / "log.txt"), "resumed from step " + std::to_string(stopped_at)))
      << read_file(dir / "ranks" / "1" / "log.txt");
  std::vector<std::string> fast = args;
  fast[fast.size() - 5] = "step_delay_ms=0";
  const Result uninterrupted = run_toyreg(straight, fast);
  ASSERT_EQ(uninterrupted.exit_code, 0) << uninterrupted.describe();
  // Stopped, resumed and finished, the run ends where the uninterrupted one does.
  const Weights a = weights_of(dir / "summary.json"), b = weights_of(straight / "summary.json");
  EXPECT_EQ(a.w, b.w);
  EXPECT_EQ(a.b, b.b);
  EXPECT_EQ(weights_of(dir / "ranks" / "1" / "summary.json").w, a.w);
}

// A scheduler's SIGTERM while a rank waits at the rendezvous for a node that never comes: the
// rank stops within seconds as preempted (75, the requeue signal), not after the whole
// --dist-timeout with a failure.
TEST_F(DistributedTest, AStopDuringRendezvousEndsTheRankAsPreemptedWithinSeconds) {
  const fs::path dir = tmp() / "run";
  RunOptions o;
  o.cwd = tmp();
  Process p(toyreg_args(dir, {"--nnodes", "2", "--node-rank", "0", "--nproc-per-node", "1", "--master-addr",
                              "127.0.0.1", "--master-port", std::to_string(free_port()), "--dist-timeout", "120",
                              "--set", "steps=20"}),
            o);
  // The worker is at the rendezvous once its log exists (it logs before joining).
  const auto started = std::chrono::steady_clock::now();
  while (p.running() && !fs::exists(dir / "log.txt") && std::chrono::steady_clock::now() - started < Millis(60000))
    std::this_thread::sleep_for(Millis(50));
  std::this_thread::sleep_for(Millis(1000));
  ASSERT_TRUE(p.running()) << p.wait(Millis(0)).describe();
  const auto stop = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(p.pid(), SIGTERM), 0);
  const Result r = p.wait(Millis(60000));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - stop).count();
  EXPECT_EQ(r.exit_code, 75) << r.describe();
  EXPECT_LT(seconds, 30.0) << "the stop waited for the rendezvous's timeout";
  const json summary = file_json(dir / "summary.json");
  EXPECT_EQ(summary["status"], "preempted") << summary.dump(2);
  EXPECT_TRUE(contains(summary.value("error", ""), "stopped while waiting")) << summary.dump(2);
  // Nothing trained, so no checkpoint: the message does not claim one.
  EXPECT_TRUE(contains(r.err, "it stopped before its first checkpoint")) << r.describe();
  EXPECT_FALSE(contains(r.err, "a checkpoint was saved")) << r.describe();
  EXPECT_TRUE(wait_for_orphans(Millis(5000)).empty());
}

TEST_F(DistributedTest, PrintPlanShowsTheRanks) {
  const Result r = host({"--plugin-dir", toyreg_, "--print-plan", "--algorithm", "toyreg", "--nproc-per-node", "2",
                         "--batch-size", "8"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "2 ranks, gloo")) << r.out;
  EXPECT_TRUE(contains(r.out, "global batch size")) << r.out;
  EXPECT_TRUE(contains(r.out, "16")) << r.out;
}

TEST_F(DistributedTest, BadLaunchesAreRefusedNamingTheProblem) {
  struct Case {
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{"--nproc-per-node", "0"}, {}, "--nproc-per-node must be at least 1"},
      {{"--nnodes", "2", "--node-rank", "0"}, {}, "--master-addr"},
      {{"--nnodes", "2", "--master-addr", "10.0.0.1"}, {}, "--node-rank"},
      {{"--nnodes", "2", "--node-rank", "2", "--master-addr", "10.0.0.1"}, {}, "--node-rank 2 is outside 0..1"},
      {{"--master-port", "70000", "--nproc-per-node", "2"}, {}, "--master-port must be from 1 to 65535"},
      {{"--nproc-per-node", "2"}, {{"RANK", "0"}, {"WORLD_SIZE", "2"}}, "cannot be used together"},
      {{}, {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1234"}}, "MASTER_ADDR"},
      {{}, {{"RANK", "3"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "1"}}, "RANK='3'"},
      {{}, {{"RANK", "0"}, {"WORLD_SIZE", "two"}}, "WORLD_SIZE='two'"},
      {{}, {{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "1234"}}, "needs --run-dir"},
      {{"--nnodes", "2", "--node-rank", "1", "--master-addr", "10.0.0.1"}, {}, "needs --run-dir"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args{"--plugin-dir", toyreg_, "--algorithm", "toyreg"};
    if (c.expected != "needs --run-dir") {
      args.push_back("--run-dir");
      args.push_back((tmp() / "never").string());
    }
    args.insert(args.end(), c.args.begin(), c.args.end());
    RunOptions o;
    o.env = c.env;
    const Result r = host(args, o);
    EXPECT_EQ(r.exit_code, 2) << r.describe();
    EXPECT_TRUE(contains(r.err, c.expected)) << "expected '" << c.expected << "'\n" << r.describe();
    EXPECT_FALSE(fs::exists(tmp() / "never")) << r.describe();
  }
}

}  // namespace
}  // namespace mlhost::cli_test
