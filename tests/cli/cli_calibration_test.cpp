// The worker's allocator and calibration through the real host with the toyreg plugin: the
// worker runs with the planned allocator and the host does not; a run calibrates first and
// caches the result per machine and algorithm; what the user sets wins; a bad cache is an
// error naming the file; a changed key calibrates again; the time bound and --no-calibrate
// hold.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "cli_harness.hpp"

namespace mlhost::cli_test {
namespace {

constexpr Millis kTimeout{300000};

// The system's jemalloc, as scripts/setup.sh installs it (libjemalloc2).
bool have_jemalloc() {
  for (const char* p : {"/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2",
                        "/usr/lib64/libjemalloc.so.2", "/usr/lib/libjemalloc.so.2"})
    if (fs::exists(p)) return true;
  return false;
}

class CalibrationTest : public ToyregTest {
 protected:
  void SetUp() override {
    ToyregTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    cache_ = tmp() / "cache";
  }

  // Sends `p` SIGTERM half a second after it started calibrating toyreg (within 60 s); false
  // when it never did.
  static bool sigterm_once_calibrating(Process& p) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline && p.running() && !contains(p.stderr_so_far(), "calibrating toyreg"))
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!contains(p.stderr_so_far(), "calibrating toyreg")) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    return ::kill(p.pid(), SIGTERM) == 0;
  }

  // Calibration allowed, with this test's own cache folder.
  RunOptions calibrating() const {
    RunOptions o;
    o.timeout = kTimeout;
    o.unset_env = {"MLH_NO_CALIBRATE"};
    o.env["XDG_CACHE_HOME"] = cache_.string();
    return o;
  }

  // A 20-step toyreg run; calibrations bounded to `bound` seconds (toyreg's candidates take
  // about a second each, most of it loading LibTorch).
  Result toyreg(const std::string& run, const std::vector<std::string>& extra, RunOptions o,
                const std::string& bound = "15") {
    std::vector<std::string> args{"--plugin-dir", toyreg_, "--algorithm", "toyreg", "--run-dir", (tmp() / run).string(),
                                  "--set", "steps=20", "--calibration-seconds", bound};
    args.insert(args.end(), extra.begin(), extra.end());
    return host(args, o);
  }

  json plan_of(const std::string& run) { return file_json(tmp() / run / "plan.json"); }
  fs::path cache_file() const { return cache_ / "mlhost" / "calibration.json"; }

  fs::path cache_;
};

TEST_F(CalibrationTest, WorkerRunsWithThePlannedAllocatorAndTheHostDoesNot) {
  if (!have_jemalloc()) GTEST_SKIP() << "libjemalloc2 is not installed (scripts/setup.sh installs it)";
  RunOptions o;
  o.timeout = kTimeout;
  std::vector<std::string> args{"--plugin-dir", toyreg_, "--algorithm", "toyreg", "--run-dir", (tmp() / "je").string(),
                                "--allocator", "jemalloc", "--set", "steps=60", "--set", "step_delay_ms=40"};
  std::vector<std::string> argv{host_path().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  o.cwd = tmp();
  Process p(argv, o);
  // While the worker trains, the host's own process maps no jemalloc and has no LD_PRELOAD.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!fs::exists(tmp() / "je" / "metrics.jsonl") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(Millis(20));
  const std::string host_maps = read_file("/proc/" + std::to_string(p.pid()) + "/maps");
  const std::string host_environ = read_file("/proc/" + std::to_string(p.pid()) + "/environ");
  const Result r = p.wait(kTimeout);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_FALSE(host_maps.empty()) << "the host ended before it could be inspected";
  EXPECT_FALSE(contains(host_maps, "libjemalloc")) << "the host itself runs with jemalloc";
  EXPECT_FALSE(contains(host_environ, "LD_PRELOAD")) << "the host itself has LD_PRELOAD";
  const json summary = file_json(tmp() / "je" / "summary.json");
  EXPECT_EQ(summary["worker"]["allocator"], "jemalloc") << summary.dump(2);
  const json plan = plan_of("je");
  EXPECT_EQ(plan["allocator"]["name"], "jemalloc");
  EXPECT_TRUE(contains(str(plan["environment"]["LD_PRELOAD"]), "libjemalloc.so.2")) << plan["environment"].dump();

  // glibc with tuned thresholds: its tunables in the worker's environment, nothing preloaded.
  Result tuned = toyreg("tuned", {"--allocator", "glibc-tuned"}, o);
  ASSERT_EQ(tuned.exit_code, 0) << tuned.describe();
  const std::string tuned_allocator = str(file_json(tmp() / "tuned" / "summary.json")["worker"]["allocator"]);
  EXPECT_TRUE(contains(tuned_allocator, "glibc.malloc.mmap_threshold=33554432")) << tuned_allocator;
  EXPECT_FALSE(plan_of("tuned")["environment"].contains("LD_PRELOAD"));
  Result plain = toyreg("plain", {"--allocator", "glibc"}, o);
  ASSERT_EQ(plain.exit_code, 0) << plain.describe();
  EXPECT_EQ(file_json(tmp() / "plain" / "summary.json")["worker"]["allocator"], "glibc");
}

TEST_F(CalibrationTest, ARunCalibratesFirstAndLaterRunsUseTheCache) {
  // A bound a busy machine does not reach either (idle, toyreg's candidates take about 10 s in
  // all); should it still stop the search, the thread candidates may go unmeasured, which the
  // calibration then says (complete: false), and the rest still holds.
  const Result first = toyreg("one", {}, calibrating(), "120");
  ASSERT_EQ(first.exit_code, 0) << first.describe();
  EXPECT_TRUE(contains(first.err, "calibrating toyreg on cpu:0")) << first.describe();
  const json plan = plan_of("one");
  EXPECT_EQ(str(plan["calibration"]["status"]).rfind("measured now", 0), 0u) << plan["calibration"].dump(2);
  ASSERT_TRUE(fs::exists(cache_file()));
  const json cache = file_json(cache_file());
  ASSERT_EQ(cache["calibrations"].size(), 1u) << cache.dump(2);
  const json& c = cache["calibrations"][0];
  EXPECT_EQ(c["key"]["algorithm"], "toyreg");
  EXPECT_EQ(c["key"]["device"], "cpu:0");
  // The plan's own allocator first, glibc's defaults (the reference) next, then every
  // allocator installed, then the threads.
  ASSERT_GE(c["measurements"].size(), 2u);
  EXPECT_EQ(c["measurements"][0]["settings"]["allocator"], have_jemalloc() ? "jemalloc" : "glibc-tuned");
  EXPECT_EQ(c["measurements"][1]["settings"]["allocator"], "glibc");
  bool one_thread = false;
  for (const json& m : c["measurements"]) one_thread = one_thread || m["settings"]["threads"] == 1;
  if (c.value("complete", true)) {
    EXPECT_TRUE(one_thread) << c.dump(2);
  }
  // The plan runs what was chosen, each value saying it was calibrated.
  EXPECT_EQ(plan["allocator"]["name"], c["chosen"]["allocator"]);
  EXPECT_EQ(plan["threads"]["intra_op"], c["chosen"]["threads"]);
  EXPECT_EQ(str(plan["sources"]["allocator"]).rfind("calibrated: ", 0), 0u) << plan["sources"].dump(2);
  EXPECT_EQ(str(plan["sources"]["threads"]).rfind("calibrated: ", 0), 0u) << plan["sources"].dump(2);

  const Result second = toyreg("two", {}, calibrating());
  ASSERT_EQ(second.exit_code, 0) << second.describe();
  EXPECT_FALSE(contains(second.err, "calibrating toyreg")) << second.describe();
  EXPECT_EQ(str(plan_of("two")["calibration"]["status"]).rfind("cached in " + cache_file().string(), 0), 0u)
      << plan_of("two")["calibration"].dump(2);
  EXPECT_EQ(plan_of("two")["allocator"], plan["allocator"]);

  // --calibrate measures again and prints the figures.
  const Result again = host({"--plugin-dir", toyreg_, "--calibrate", "--algorithm", "toyreg", "--calibration-seconds", "15"},
                            calibrating());
  ASSERT_EQ(again.exit_code, 0) << again.describe();
  EXPECT_TRUE(contains(again.out, "Calibration of toyreg on cpu:0")) << again.describe();
  EXPECT_TRUE(contains(again.out, "<- chosen")) << again.describe();
}

TEST_F(CalibrationTest, TheCommandLineAndTheSettingsFileWinOverCalibration) {
  ASSERT_EQ(toyreg("calibrated", {}, calibrating()).exit_code, 0);
  Result r = toyreg("cli", {"--allocator", "glibc"}, calibrating());
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(plan_of("cli")["allocator"]["name"], "glibc");
  EXPECT_EQ(plan_of("cli")["sources"]["allocator"], "command line --allocator");

  write_file(tmp() / "hw.ini", "allocator = glibc-tuned\nintra_op_threads = 1\n");
  r = toyreg("file", {"--hardware-config", (tmp() / "hw.ini").string()}, calibrating());
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const json plan = plan_of("file");
  EXPECT_EQ(plan["allocator"]["name"], "glibc-tuned");
  EXPECT_EQ(plan["threads"]["intra_op"], 1);
  EXPECT_TRUE(contains(str(plan["sources"]["allocator"]), "hw.ini:1")) << plan["sources"].dump(2);
  EXPECT_TRUE(contains(str(plan["sources"]["threads"]), "hw.ini:2")) << plan["sources"].dump(2);

  write_file(tmp() / "bad.ini", "allocator = fastest\n");
  r = toyreg("bad", {"--hardware-config", (tmp() / "bad.ini").string()}, calibrating());
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "bad.ini") && contains(r.err, "allocator")) << r.describe();
  EXPECT_FALSE(fs::exists(tmp() / "bad")) << "nothing written for a bad settings file";
  r = toyreg("bad2", {"--allocator", "fastest"}, calibrating());
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "--allocator 'fastest'")) << r.describe();
}

// The cache is derived data: a damaged one is a warning naming the file and the field, is
// never used, and the run measures again and replaces it.
TEST_F(CalibrationTest, ADamagedCacheIsAWarningAndIsMeasuredAgainAndReplaced) {
  write_file(cache_file(), "{\"schema_version\": 1, \"calibrations\": [{\"key\": 7}]}");
  // --print-plan reads the cache too: it warns and plans without it.
  Result r = host({"--plugin-dir", toyreg_, "--print-plan", "--algorithm", "toyreg"}, calibrating());
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.err, cache_file().string()) && contains(r.err, "calibrations[0]")) << r.describe();
  EXPECT_TRUE(contains(r.err, "not used; the next calibration that completes on a quiet machine replaces it"))
      << r.describe();

  r = toyreg("run", {}, calibrating());
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.err, "calibrations[0]") && contains(r.err, "not used")) << r.describe();
  EXPECT_EQ(str(plan_of("run")["calibration"]["status"]).rfind("measured now", 0), 0u);
  const json cache = file_json(cache_file());
  ASSERT_EQ(cache["calibrations"].size(), 1u);
  EXPECT_EQ(cache["calibrations"][0]["key"]["algorithm"], "toyreg");
}

// A stop request while the host calibrates is kept: the run ends before it trains (exit 75
// for SIGTERM, a preemption), rather than training until a second signal.
TEST_F(CalibrationTest, SigtermWhileCalibratingEndsTheRunBeforeItTrains) {
  RunOptions o = calibrating();
  o.cwd = tmp();
  Process p({host_path().string(), "--plugin-dir", toyreg_, "--algorithm", "toyreg", "--run-dir", (tmp() / "run").string(),
             "--set", "steps=20", "--calibration-seconds", "60", "--set", "step_delay_ms=200"},
            o);
  ASSERT_TRUE(sigterm_once_calibrating(p)) << p.wait(Millis(0)).describe();
  const auto sent = std::chrono::steady_clock::now();
  const Result r = p.wait(Millis(60000));
  EXPECT_LT(std::chrono::steady_clock::now() - sent, std::chrono::seconds(20)) << r.describe();
  EXPECT_EQ(r.exit_code, 75) << r.describe();
  EXPECT_TRUE(contains(r.err, "SIGTERM while planning: preempted before training")) << r.describe();
  EXPECT_FALSE(fs::exists(tmp() / "run" / "metrics.jsonl")) << "it trained";
}

// `host --calibrate` stopped part-way keeps nothing of it (part of a calibration taken for a
// whole one would never try the rest) and exits as stopped.
TEST_F(CalibrationTest, AStoppedCalibrationIsNotCachedAndExitsAsStopped) {
  RunOptions o = calibrating();
  o.cwd = tmp();
  Process p({host_path().string(), "--plugin-dir", toyreg_, "--calibrate", "--algorithm", "toyreg",
             "--calibration-seconds", "60", "--set", "step_delay_ms=200"},
            o);
  ASSERT_TRUE(sigterm_once_calibrating(p)) << p.wait(Millis(0)).describe();
  const Result r = p.wait(Millis(60000));
  EXPECT_EQ(r.exit_code, 75) << r.describe();
  EXPECT_TRUE(contains(r.err, "SIGTERM stopped it")) << r.describe();
  EXPECT_FALSE(contains(r.out, "<- chosen")) << r.describe();
  if (fs::exists(cache_file())) {
    const json cache = file_json(cache_file());
    EXPECT_TRUE(cache["calibrations"].empty()) << cache.dump(2);
  }
}

// The measurements a calibration reported on stderr ("calibration: <settings>: <figure> <unit>/s").
size_t measurements_reported(const std::string& err) {
  size_t n = 0;
  for (size_t at = err.find("calibration: "); at != std::string::npos; at = err.find("calibration: ", at + 1)) {
    const size_t end = err.find('\n', at);
    const std::string line = err.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (line.size() > 2 && line.compare(line.size() - 2, 2, "/s") == 0) ++n;
  }
  return n;
}

// A stop at any stage of a calibration (during each candidate's measurement, the last one's
// quality check included where this CPU has a bf16 candidate) ends the host within 5 s: the
// measuring worker is killed at once, as it has nothing to save, and nothing is cached.
TEST_F(CalibrationTest, ASigtermDuringAnyMeasurementEndsTheHostWithinFiveSeconds) {
  RunOptions o = calibrating();
  o.cwd = tmp();
  const std::vector<std::string> args{host_path().string(), "--plugin-dir", toyreg_, "--calibrate", "--algorithm",
                                      "toyreg", "--calibration-seconds", "20", "--set", "step_delay_ms=100"};
  const Result whole = run(args, o);
  ASSERT_EQ(whole.exit_code, 0) << whole.describe();
  const size_t stages = measurements_reported(whole.err);
  ASSERT_GE(stages, 2u) << whole.describe();
  fs::remove_all(cache_);
  for (size_t stage = 0; stage < stages; ++stage) {
    SCOPED_TRACE("a SIGTERM during measurement " + std::to_string(stage + 1) + " of " + std::to_string(stages));
    Process p(args, o);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (p.running() && std::chrono::steady_clock::now() < give_up &&
           (!contains(p.stderr_so_far(), "calibrating toyreg") || measurements_reported(p.stderr_so_far()) < stage))
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_TRUE(p.running()) << p.wait(Millis(0)).describe();
    // Into the next measurement: a measurement takes 0.4 s on a fast CPU (a few 100 ms steps).
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_EQ(::kill(p.pid(), SIGTERM), 0);
    const auto sent = std::chrono::steady_clock::now();
    const Result r = p.wait(Millis(60000));
    EXPECT_LT(std::chrono::steady_clock::now() - sent, std::chrono::seconds(5)) << r.describe();
    EXPECT_EQ(r.exit_code, 75) << r.describe();
    if (fs::exists(cache_file())) EXPECT_TRUE(file_json(cache_file())["calibrations"].empty()) << r.describe();
  }
}

// With a calibration, the plan says how long the run will take (the work its algorithm
// declares at the speed measured), and a run of more than an hour warns before it trains.
TEST_F(CalibrationTest, ThePlanSaysHowLongTheRunTakesAndWarnsBeforeOneOfHours) {
  RunOptions o = calibrating();
  o.cwd = tmp();
  const Result calibrated = run({host_path().string(), "--plugin-dir", toyreg_, "--calibrate", "--algorithm", "toyreg",
                                 "--calibration-seconds", "10"},
                                o);
  ASSERT_EQ(calibrated.exit_code, 0) << calibrated.describe();
  // The cached calibration is the config's (its key holds the config's hash): the same config.
  const Result plan = run({host_path().string(), "--plugin-dir", toyreg_, "--print-plan", "--algorithm", "toyreg",
                           "--no-calibrate"},
                          o);
  ASSERT_EQ(plan.exit_code, 0) << plan.describe();
  EXPECT_TRUE(contains(plan.out, "expected duration        about ")) << plan.describe();
  EXPECT_TRUE(contains(plan.out, "samples/s (the calibration's figure); steps or --max-steps shortens it"))
      << plan.describe();

  // Two billion steps: hours at any speed. The run calibrates this config first; the warning
  // comes before training, which then fails at its first step as asked (fail_at_step), so the
  // test does not wait.
  const Result long_run = run({host_path().string(), "--plugin-dir", toyreg_, "--algorithm", "toyreg",
                               "--calibration-seconds", "5", "--run-dir", (tmp() / "long").string(), "--set",
                               "steps=2000000000", "--set", "fail_at_step=1"},
                              o);
  EXPECT_EQ(long_run.exit_code, 1) << long_run.describe();
  const size_t warned = long_run.err.find("this run is expected to take about ");
  ASSERT_NE(warned, std::string::npos) << long_run.describe();
  EXPECT_TRUE(contains(long_run.err.substr(warned), " h ")) << long_run.describe();
  EXPECT_EQ(file_json(tmp() / "long" / "plan.json")["expected_duration"].value("unit", ""), "samples");
}

TEST_F(CalibrationTest, AChangedKeyCalibratesAgain) {
  ASSERT_EQ(toyreg("first", {}, calibrating()).exit_code, 0);
  json cache = file_json(cache_file());
  const json real_key = cache["calibrations"][0]["key"];
  cache["calibrations"][0]["key"]["torch_version"] = "0.1";  // as if measured with another LibTorch
  write_file(cache_file(), cache.dump(2));
  const Result r = toyreg("second", {}, calibrating());
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.err, "calibrating toyreg")) << r.describe();
  EXPECT_EQ(str(plan_of("second")["calibration"]["status"]).rfind("measured now", 0), 0u);
  cache = file_json(cache_file());
  ASSERT_EQ(cache["calibrations"].size(), 2u) << "one entry per key: " << cache.dump(2);
  EXPECT_EQ(cache["calibrations"][1]["key"], real_key);
  EXPECT_EQ(cache["calibrations"][0]["key"]["torch_version"], "0.1");
}

TEST_F(CalibrationTest, TheTimeBoundAndNoCalibrateHold) {
  RunOptions o = calibrating();
  const auto t0 = std::chrono::steady_clock::now();
  Result r = toyreg("bounded", {}, o, "2");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const json calibration = plan_of("bounded")["calibration"];
  const std::string status = str(calibration["status"]);
  if (calibration.contains("seconds")) {  // something was measured within the bound
    EXPECT_LE(calibration["seconds"].get<double>(), 3.0) << calibration.dump(2);
    EXPECT_EQ(calibration["complete"], false) << "every candidate fitted in 2 s? " << calibration.dump(2);
  } else {
    EXPECT_TRUE(contains(status, "time bound")) << status;
  }
  EXPECT_LT(seconds, 30) << "a 2 s calibration and a 20-step run";

  // A partial calibration is cached, and --no-calibrate uses it; with an empty cache it
  // measures nothing.
  if (calibration.contains("seconds")) {
    r = toyreg("cached", {"--no-calibrate"}, calibrating());
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    EXPECT_EQ(str(plan_of("cached")["calibration"]["status"]).rfind("cached in", 0), 0u) << plan_of("cached")["calibration"];
  }
  const fs::path fresh = tmp() / "fresh-cache";
  o.env["XDG_CACHE_HOME"] = fresh.string();
  r = toyreg("skipped", {"--no-calibrate"}, o);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(plan_of("skipped")["calibration"]["status"], "not calibrated: --no-calibrate");
  EXPECT_FALSE(contains(r.err, "calibrating")) << r.describe();
  o.env["MLH_NO_CALIBRATE"] = "1";
  r = toyreg("env", {}, o);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(plan_of("env")["calibration"]["status"], "not calibrated: MLH_NO_CALIBRATE is set");
  EXPECT_FALSE(fs::exists(fresh)) << "nothing cached without calibrating";
}

}  // namespace
}  // namespace mlhost::cli_test
