// The crash soak: a toyreg training run is killed with SIGKILL (the host's whole process
// group; the worker dies with the host) at random moments, many times in a row, and resumed
// with --resume each time until it completes. It must end with exactly the parameters of an
// uninterrupted run with the same seed (summary w and b, model.safetensors byte for byte, and
// every step's loss), and after every kill every checkpoint in the run folder must verify
// (the MLHCKPT1 header and its CRC-32C, as the runtime's loader checks them).
//
// Deterministic: one seed for the kill schedule (MLH_SOAK_SEED overrides it, MLH_SOAK_KILLS
// the number of kills aimed at). checkpoint_every=1 makes a checkpoint write part of every
// step, so many kills land inside one; single-threaded LibTorch (a hardware settings file)
// keeps the arithmetic bit-identical from run to run.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <thread>

#include <mlh/crc32c.hpp>

#include "cli_harness.hpp"

namespace mlhost::cli_test {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

uint64_t env_or(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

// Why a checkpoint file does not verify, or "" when it does (the layout of
// sdk/include/mlh/runtime/checkpoint.hpp: magic, payload length, step, metric, reserved, CRC).
std::string verify_checkpoint(const fs::path& path) {
  const std::string bytes = read_file(path);
  if (bytes.size() < 40) return "shorter than the 40-byte header (" + std::to_string(bytes.size()) + " bytes)";
  if (bytes.compare(0, 8, "MLHCKPT1") != 0) return "no MLHCKPT1 magic";
  uint64_t payload = 0;
  std::memcpy(&payload, bytes.data() + 8, 8);
  if (payload != bytes.size() - 40)
    return "payload length " + std::to_string(payload) + " but the file has " + std::to_string(bytes.size() - 40);
  uint32_t stored = 0;
  std::memcpy(&stored, bytes.data() + 36, 4);
  const uint32_t computed = mlh::crc32c(bytes.data(), 36, mlh::crc32c(bytes.data() + 40, payload));
  if (stored != computed) return "CRC-32C mismatch";
  return "";
}

// Lines of metrics.jsonl that parse (a torn last line of a killed host is counted, not fatal).
struct Metrics {
  std::vector<json> lines;
  size_t unparsable = 0;
};
Metrics read_metrics(const fs::path& file) {
  Metrics m;
  for (const std::string& line : read_lines(file)) {
    if (line.empty()) continue;
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      ++m.unparsable;
    else
      m.lines.push_back(std::move(j));
  }
  return m;
}

// The step of the newest checkpoint (checkpoints/step-NNNNNNNNN.ckpt) in `dir`; 0 when none.
int64_t latest_checkpoint_step(const fs::path& dir) {
  int64_t latest = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() == 19 && name.rfind("step-", 0) == 0 && name.substr(14) == ".ckpt")
      latest = std::max<int64_t>(latest, std::stoll(name.substr(5, 9)));
  }
  return latest;
}

// Verifies every checkpoint file in `dir`; returns how many, or fails the test naming the
// first that does not verify. Unfinished writes (temporary names) are never read as
// checkpoints and are collected in `interrupted`.
size_t verify_checkpoints(const fs::path& dir, std::set<std::string>& interrupted) {
  size_t verified = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.find(".tmp-") != std::string::npos) {
      interrupted.insert(name);
      continue;
    }
    if (name.size() < 5 || name.substr(name.size() - 5) != ".ckpt") continue;
    const std::string problem = verify_checkpoint(it->path());
    EXPECT_EQ(problem, "") << "checkpoint " << it->path() << " is unreadable";
    ++verified;
  }
  return verified;
}

// Every train/loss a run logged (a resumed step is logged again), by step.
std::map<int64_t, double> losses_of(const fs::path& run_dir) {
  std::map<int64_t, double> losses;
  for (const json& m : read_metrics(run_dir / "metrics.jsonl").lines)
    if (m["name"] == "train/loss") losses[m["step"].get<int64_t>()] = m["value"].get<double>();
  return losses;
}

// Compares every train/loss `metrics` logged (redone steps each time) with the reference's
// loss at that step: fails the test on any difference and on a step never logged.
void expect_losses_match(const Metrics& metrics, const std::map<int64_t, double>& reference) {
  std::set<int64_t> steps_seen;
  size_t mismatched = 0;
  for (const json& m : metrics.lines) {
    if (m["name"] != "train/loss") continue;
    const int64_t step = m["step"].get<int64_t>();
    steps_seen.insert(step);
    const auto ref = reference.find(step);
    if (ref == reference.end() || ref->second != m["value"].get<double>()) ++mismatched;
  }
  EXPECT_EQ(mismatched, 0u) << "logged losses that differ from the uninterrupted run";
  EXPECT_EQ(steps_seen.size(), reference.size()) << "steps never logged";
}

uintmax_t size_of(const fs::path& p) {
  std::error_code ec;
  const uintmax_t n = fs::file_size(p, ec);
  return ec ? 0 : n;
}

class SoakTest : public ToyregTest {
 protected:
  void SetUp() override {
    ToyregTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    hardware_ = single_thread_settings(tmp());
  }

  std::vector<std::string> args(const fs::path& run_dir, bool resume) {
    std::vector<std::string> a{host_path().string(), "--plugin-dir", toyreg_, "--algorithm", "toyreg",
                               "--run-dir", run_dir.string(), "--device", "cpu", "--hardware-config", hardware_.string()};
    if (resume) {
      a.push_back("--resume");
    } else {
      for (const char* s : {"steps=400", "checkpoint_every=1", "step_delay_ms=4", "seed=11", "lr=0.05"}) {
        a.push_back("--set");
        a.push_back(s);
      }
    }
    return a;
  }

  RunOptions opts() {
    RunOptions o;
    o.cwd = tmp();
    o.timeout = Millis(180000);
    return o;
  }

  fs::path hardware_;
};

TEST_F(SoakTest, RunKilledAtRandomMomentsAndResumedMatchesAnUninterruptedRun) {
  const auto test_start = Clock::now();
  const uint64_t seed = env_or("MLH_SOAK_SEED", 20261122);
  const uint64_t target_kills = env_or("MLH_SOAK_KILLS", 40);

  // 1. The reference: uninterrupted, timed (start-up until the first step, then training).
  const fs::path ref = tmp() / "reference";
  double startup_ms = 0, total_ms = 0;
  {
    const auto t0 = Clock::now();
    Process p(args(ref, false), opts());
    while (p.running() && size_of(ref / "metrics.jsonl") == 0 && ms_since(t0) < 120000)
      std::this_thread::sleep_for(Millis(5));
    startup_ms = ms_since(t0);
    const Result r = p.wait(Millis(120000));
    total_ms = ms_since(t0);
    ASSERT_EQ(r.exit_code, 0) << r.describe();
  }
  const json ref_summary = file_json(ref / "summary.json");
  ASSERT_EQ(ref_summary["status"], "completed") << ref_summary.dump(2);
  const json ref_result = ref_summary["result"];
  ASSERT_TRUE(ref_result.contains("w")) << ref_summary.dump(2);
  EXPECT_EQ(ref_result["torch_threads"], 1) << "the runs must be single-threaded to be bit-identical";
  const std::string ref_weights = read_file(ref / "model.safetensors");
  ASSERT_FALSE(ref_weights.empty());
  const std::map<int64_t, double> ref_loss = losses_of(ref);
  ASSERT_EQ(ref_loss.size(), 400u);
  const double train_ms = std::max(200.0, total_ms - startup_ms);

  // 2. The same run, killed again and again. Most kills come a uniformly random time after
  // this attempt's first metric (so they fall anywhere in training, checkpoint writes
  // included); one in five comes during start-up (LibTorch loading, the checkpoint being
  // read back). The window adapts to what is left of the run, so that about `target_kills`
  // (40) kills happen, spread over the whole of training, before it completes.
  const double ms_per_step = train_ms / 400.0;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const fs::path run = tmp() / "soak";
  size_t kills = 0, startup_kills = 0, checkpoints_verified = 0, attempts = 0;
  std::set<std::string> interrupted_writes;  // temporary files left by kills inside a write
  bool completed = false;
  std::set<int64_t> kill_steps;  // the newest checkpoint's step after each kill
  double delay_total_ms = 0, steps_total = 0;  // training kills: their delays and the steps they let through
  const auto soak_start = Clock::now();
  while (!completed && kills < target_kills + target_kills / 4) {
    ++attempts;
    const bool resume = fs::exists(run / "config.json");
    const uintmax_t size_before = size_of(run / "metrics.jsonl");
    const auto t0 = Clock::now();
    Process p(args(run, resume), opts());
    // The first attempt is not killed before training starts (the run folder must exist).
    const bool at_startup = attempts > 1 && unit(rng) < 0.2;
    // The window: what is left of the run, at the progress rate seen so far (steps per ms of
    // delay, which includes each attempt's own overheads), shared among the kills still to come.
    const int64_t step_before = latest_checkpoint_step(run / "checkpoints");
    const double kills_left = std::max(1.0, static_cast<double>(target_kills) - static_cast<double>(kills));
    const double rate = delay_total_ms > 0 ? std::max(1e-3, steps_total / delay_total_ms) : 1.0 / ms_per_step;
    const double window_ms = std::max(20.0, 2.0 * static_cast<double>(400 - step_before) / rate / (0.8 * kills_left));
    const double delay = at_startup ? unit(rng) * startup_ms : unit(rng) * window_ms;
    if (!at_startup) {
      while (p.running() && size_of(run / "metrics.jsonl") <= size_before && ms_since(t0) < 120000)
        std::this_thread::sleep_for(Millis(2));
    }
    const auto aim = Clock::now() + std::chrono::microseconds(static_cast<int64_t>(delay * 1000));
    while (p.running() && Clock::now() < aim) std::this_thread::sleep_for(Millis(1));
    if (!p.running()) {  // it finished before the kill: the run is complete
      const Result r = p.wait(Millis(10000));
      ASSERT_EQ(r.exit_code, 0) << "attempt " << attempts << ": " << r.describe();
      completed = true;
      break;
    }
    ASSERT_EQ(::kill(-p.pid(), SIGKILL), 0) << std::strerror(errno);
    const Result r = p.wait(Millis(10000));
    if (r.exit_code == 0) {  // it finished just before the kill
      completed = true;
      break;
    }
    ASSERT_EQ(r.signal, SIGKILL) << r.describe();
    ++kills;
    if (at_startup) ++startup_kills;
    kill_steps.insert(latest_checkpoint_step(run / "checkpoints"));
    if (!at_startup) {
      delay_total_ms += delay;
      steps_total += static_cast<double>(latest_checkpoint_step(run / "checkpoints") - step_before);
    }
    // The worker (in a process group of its own) must die with the host.
    const std::vector<std::string> left = wait_for_orphans(Millis(10000));
    ASSERT_TRUE(left.empty()) << "still running after the host was killed: " << left.front();

    // Every checkpoint the kill left must verify.
    checkpoints_verified += verify_checkpoints(run / "checkpoints", interrupted_writes);
    ASSERT_FALSE(HasFailure()) << "after kill " << kills;
    if (ms_since(soak_start) > 100000) break;  // keep the test bounded on a slow machine
  }
  const bool finished_by_attempt = completed;
  if (!completed) {  // the kill or time cap: finish without kills
    const Result r = run_host({"--plugin-dir", toyreg_, "--algorithm", "toyreg", "--run-dir", run.string(), "--device",
                               "cpu", "--hardware-config", hardware_.string(), "--resume"},
                              opts());
    ASSERT_EQ(r.exit_code, 0) << r.describe();
  }
  const double soak_ms = ms_since(soak_start);

  // 3. The end state equals the reference exactly.
  const json summary = file_json(run / "summary.json");
  ASSERT_EQ(summary["status"], "completed") << summary.dump(2);
  EXPECT_EQ(summary["result"]["w"].get<double>(), ref_result["w"].get<double>()) << summary.dump(2);
  EXPECT_EQ(summary["result"]["b"].get<double>(), ref_result["b"].get<double>()) << summary.dump(2);
  EXPECT_EQ(summary["result"]["final_loss"].get<double>(), ref_result["final_loss"].get<double>());
  EXPECT_TRUE(read_file(run / "model.safetensors") == ref_weights) << "model.safetensors differs from the reference";
  // Every step's loss, each time it was logged (a resumed step is redone), is the reference's.
  const Metrics metrics = read_metrics(run / "metrics.jsonl");
  expect_losses_match(metrics, ref_loss);
  // No resume ever skipped a checkpoint as corrupt (the loader warns into log.txt).
  const std::string log = read_file(run / "log.txt");
  EXPECT_FALSE(contains(log, "skipping checkpoint")) << log.substr(0, 4000);
  // And the trained model loads for evaluation.
  const Result eval = run_host({"--plugin-dir", toyreg_, "--algorithm", "toyreg", "--run-dir", run.string(), "--device",
                                "cpu", "--hardware-config", hardware_.string(), "--resume", "--command", "eval"},
                               opts());
  EXPECT_EQ(eval.exit_code, 0) << eval.describe();

  EXPECT_GE(kills, target_kills / 2) << "too few kills to call this a soak";
  std::printf(
      "[ soak     ] %zu SIGKILLs survived (%zu during start-up, %zu inside a checkpoint write), %zu attempts, "
      "%zu checkpoint files verified, %zu torn metrics lines; reference run %.0f ms (start-up %.0f ms); "
      "soak %.1f s, test %.1f s; seed %llu; kills landed between steps %lld and %lld (%zu distinct); %s\n",
      kills, startup_kills, interrupted_writes.size(), attempts, checkpoints_verified, metrics.unparsable, total_ms,
      startup_ms, soak_ms / 1000, ms_since(test_start) / 1000, static_cast<unsigned long long>(seed),
      kill_steps.empty() ? 0LL : static_cast<long long>(*kill_steps.begin()),
      kill_steps.empty() ? 0LL : static_cast<long long>(*kill_steps.rbegin()), kill_steps.size(),
      finished_by_attempt ? "the last attempt ran to the end" : "a final resume without kills finished it");
  RecordProperty("kills", static_cast<int>(kills));
}

// The same with two ranks started by the host with --max-restarts: one rank, either, killed
// with SIGKILL at random moments of training, over and over in one launch. Each kill must
// cost exactly one restart of both ranks from the last checkpoint, and the run must end with
// what an uninterrupted two-rank run ends with: the weights (summary and model.safetensors
// byte for byte) and every logged step's loss.
TEST_F(SoakTest, TwoRanksWithOneKilledAtRandomMomentsRestartAndMatchAnUninterruptedRun) {
  const auto test_start = Clock::now();
  const uint64_t seed = env_or("MLH_SOAK_SEED", 20261126);
  const size_t target_kills = env_or("MLH_SOAK_RANK_KILLS", 8);
  constexpr int64_t kSteps = 200;
  auto two_ranks = [&](const fs::path& run_dir) {
    std::vector<std::string> a = args(run_dir, false);
    a.insert(a.end(), {"--nproc-per-node", "2", "--batch-size", "16", "--set", "steps=" + std::to_string(kSteps),
                       "--max-restarts", std::to_string(target_kills + 2)});
    return a;
  };

  const fs::path ref = tmp() / "reference";
  const auto ref_start = Clock::now();
  const Result ref_run = run(two_ranks(ref), opts());
  const double ref_ms = ms_since(ref_start);
  ASSERT_EQ(ref_run.exit_code, 0) << ref_run.describe();
  const json ref_result = file_json(ref / "summary.json")["result"];
  const std::map<int64_t, double> ref_loss = losses_of(ref);
  ASSERT_EQ(ref_loss.size(), static_cast<size_t>(kSteps));

  const fs::path run_dir = tmp() / "soak";
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double ms_per_step = std::max(1.0, ref_ms / kSteps);
  Process p(two_ranks(run_dir), opts());
  std::set<pid_t> seen;  // the workers of attempts already killed, which may not have been reaped yet
  size_t kills = 0, kills_of_rank0 = 0;
  std::set<int64_t> kill_steps;
  while (kills < target_kills && p.running()) {
    // This attempt's two workers, and training under way in it (its metrics file grows).
    pid_t workers[2] = {-1, -1};
    const uintmax_t size_before = size_of(run_dir / "metrics.jsonl");
    const auto wait_start = Clock::now();
    while (p.running() && ms_since(wait_start) < 60000) {
      for (int r = 0; r < 2; ++r) workers[r] = worker_of_rank(p.pid(), r);
      if (workers[0] > 0 && workers[1] > 0 && !seen.count(workers[0]) && !seen.count(workers[1]) &&
          size_of(run_dir / "metrics.jsonl") > size_before)
        break;
      std::this_thread::sleep_for(Millis(2));
    }
    // No kill near the end, where a worker may already have exited successfully.
    if (!p.running() || latest_checkpoint_step(run_dir / "checkpoints") > kSteps * 8 / 10) break;
    seen.insert(workers[0]);
    seen.insert(workers[1]);
    // Anywhere in this kill's share of the steps left.
    const double share = static_cast<double>(kSteps - latest_checkpoint_step(run_dir / "checkpoints")) /
                         static_cast<double>(target_kills - kills + 1);
    std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(unit(rng) * share * ms_per_step * 1000)));
    const int rank = unit(rng) < 0.5 ? 0 : 1;
    if (!p.running() || ::kill(workers[rank], SIGKILL) != 0) break;
    ++kills;
    if (rank == 0) ++kills_of_rank0;
    kill_steps.insert(latest_checkpoint_step(run_dir / "checkpoints"));
  }
  const Result r = p.wait(Millis(180000));
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const double soak_ms = ms_since(test_start);

  const json summary = file_json(run_dir / "summary.json");
  ASSERT_EQ(summary["status"], "completed") << summary.dump(2);
  ASSERT_EQ(summary.value("restarts", json::array()).size(), kills) << summary.dump(2);
  for (const json& restart : summary.value("restarts", json::array()))
    EXPECT_TRUE(contains(str(restart["cause"]), "killed by signal 9")) << restart.dump();
  EXPECT_EQ(summary["result"]["w"].get<double>(), ref_result["w"].get<double>()) << summary.dump(2);
  EXPECT_EQ(summary["result"]["b"].get<double>(), ref_result["b"].get<double>()) << summary.dump(2);
  EXPECT_EQ(summary["result"]["final_loss"].get<double>(), ref_result["final_loss"].get<double>());
  EXPECT_TRUE(read_file(run_dir / "model.safetensors") == read_file(ref / "model.safetensors"))
      << "model.safetensors differs from the reference";
  expect_losses_match(read_metrics(run_dir / "metrics.jsonl"), ref_loss);
  std::set<std::string> interrupted_writes;
  const size_t checkpoints_verified = verify_checkpoints(run_dir / "checkpoints", interrupted_writes);
  EXPECT_TRUE(wait_for_orphans(Millis(10000)).empty());
  EXPECT_GE(kills, target_kills / 2) << "too few kills to call this a soak";
  std::printf(
      "[ soak     ] two ranks: %zu SIGKILLs of one rank (%zu of rank 0), %zu restarts, all from the last checkpoint; "
      "%zu checkpoint files verified, %zu interrupted writes; reference run %.1f s, soak test %.1f s; seed %llu; "
      "kills after checkpoints of steps %lld to %lld; result equal to the uninterrupted run's\n",
      kills, kills_of_rank0, summary.value("restarts", json::array()).size(), checkpoints_verified,
      interrupted_writes.size(), ref_ms / 1000, soak_ms / 1000, static_cast<unsigned long long>(seed),
      kill_steps.empty() ? 0LL : static_cast<long long>(*kill_steps.begin()),
      kill_steps.empty() ? 0LL : static_cast<long long>(*kill_steps.rbegin()));
  RecordProperty("rank_kills", static_cast<int>(kills));
}

}  // namespace
}  // namespace mlhost::cli_test
