// host --sweep and --seeds, through the real host with the toyreg plugin: every trial is an
// ordinary run folder with the trial's config; trials.csv and summary.csv hold each trial's
// last metrics and, per configuration, the mean and 95% interval over the seeds, computed
// here again from the trials' own summary.json; random draws stay in their ranges; a sweep
// stopped by SIGTERM resumes where it stopped without running a finished trial again; a spec
// that does not parse, or names a key or value the algorithm does not take, fails before any
// trial, naming it, and leaves no folder behind.
#include <signal.h>

#include <cmath>
#include <sstream>
#include <thread>

#include "cli_harness.hpp"

namespace mlhost::cli_test {
namespace {

constexpr Millis kSweepTimeout{300000};

// CSV rows split at commas (the files here hold no quoted fields), keyed by the header.
std::vector<std::map<std::string, std::string>> read_csv(const fs::path& path) {
  std::vector<std::map<std::string, std::string>> rows;
  const std::vector<std::string> lines = read_lines(path);
  if (lines.empty()) return rows;
  auto split = [](const std::string& line) {
    std::vector<std::string> fields;
    std::stringstream in(line);
    for (std::string f; std::getline(in, f, ',');) fields.push_back(f);
    if (!line.empty() && line.back() == ',') fields.push_back("");
    return fields;
  };
  const std::vector<std::string> header = split(lines[0]);
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> fields = split(lines[i]);
    std::map<std::string, std::string> row;
    for (size_t c = 0; c < header.size() && c < fields.size(); ++c) row[header[c]] = fields[c];
    rows.push_back(row);
  }
  return rows;
}

class SweepTest : public ToyregTest {
 protected:
  void SetUp() override {
    ToyregTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    hardware_ = single_thread_settings(tmp());
  }

  std::vector<std::string> args(const std::vector<std::string>& extra) const {
    std::vector<std::string> a{"--plugin-dir", toyreg_, "--algorithm", "toyreg", "--run-dir", sweep_dir().string(),
                               "--device", "cpu", "--hardware-config", hardware_.string(), "--no-calibrate",
                               "--batch-size", "16"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }

  Result sweep(const std::vector<std::string>& extra) {
    RunOptions o;
    o.timeout = kSweepTimeout;
    return host(args(extra), o);
  }

  fs::path sweep_dir() const { return tmp() / "sweep"; }
  json trial_summary(const std::string& trial) { return file_json(sweep_dir() / trial / "summary.json"); }
  json trial_config(const std::string& trial) { return file_json(sweep_dir() / trial / "config.json"); }

  fs::path hardware_;
};

TEST_F(SweepTest, AGridTimesSeedsRunsEveryTrialAndSummarizesOverTheSeeds) {
  const Result r = sweep({"--sweep", "lr=0.02,0.2", "--seeds", "2", "--set", "steps=15"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();

  // The grid in order, each configuration with the seeds 1 and 2, each trial a run folder.
  const std::vector<std::pair<double, int>> expected = {{0.02, 1}, {0.02, 2}, {0.2, 1}, {0.2, 2}};
  std::vector<double> loss;
  for (size_t i = 0; i < expected.size(); ++i) {
    const std::string trial = "trial-00" + std::to_string(i + 1);
    const json config = trial_config(trial);
    EXPECT_DOUBLE_EQ(config["lr"].get<double>(), expected[i].first) << trial;
    EXPECT_EQ(config["seed"], expected[i].second) << trial;
    EXPECT_EQ(config["steps"], 15) << trial << ": the shared --set reaches every trial";
    const json summary = trial_summary(trial);
    ASSERT_EQ(summary["status"], "completed") << trial << " " << summary.dump();
    loss.push_back(summary["last_metrics"]["train/loss"].get<double>());
  }
  EXPECT_NE(loss[0], loss[1]) << "the seeds give different trials";
  EXPECT_NE(loss[0], loss[2]) << "the learning rate changes the result";

  const auto trials = read_csv(sweep_dir() / "trials.csv");
  ASSERT_EQ(trials.size(), 4u);
  EXPECT_EQ(trials[2].at("trial"), "trial-003");
  EXPECT_EQ(trials[2].at("lr"), "0.2");
  EXPECT_EQ(trials[2].at("seed"), "1");
  EXPECT_EQ(trials[2].at("status"), "completed");
  EXPECT_NEAR(std::stod(trials[2].at("train/loss")), loss[2], 1e-5 * std::abs(loss[2]));

  // Per configuration: the mean of its two seeds, and t(0.975, 1 df) = 12.706 times the
  // standard error.
  const auto summary = read_csv(sweep_dir() / "summary.csv");
  ASSERT_EQ(summary.size(), 2u);
  for (size_t c = 0; c < 2; ++c) {
    const double a = loss[2 * c], b = loss[2 * c + 1];
    const double mean = (a + b) / 2, half = 12.706 * std::abs(a - b) / 2;
    EXPECT_EQ(summary[c].at("completed"), "2");
    EXPECT_NEAR(std::stod(summary[c].at("train/loss mean")), mean, 1e-5 * std::abs(mean)) << c;
    EXPECT_NEAR(std::stod(summary[c].at("train/loss ci95")), half, 1e-4 * half + 1e-12) << c;
  }
  // The printed table: a row per configuration with its seeds done; progress with an ETA.
  EXPECT_TRUE(contains(r.out, "seeds done")) << r.out;
  EXPECT_TRUE(contains(r.out, "2/2")) << r.out;
  EXPECT_TRUE(contains(r.out, " ± ")) << r.out;
  EXPECT_TRUE(contains(r.err, "4 trials (2 configurations x 2 seeds)")) << r.err;
  // The settings file gives a run one thread: as many trials at once as there are cores.
  EXPECT_TRUE(contains(r.err, "(the plan gives a trial 1 of ")) << r.err;
  EXPECT_TRUE(contains(r.err, "1/4 done, ETA ")) << r.err;
  EXPECT_TRUE(contains(r.err, "4/4 done")) << r.err;
  EXPECT_TRUE(fs::is_regular_file(sweep_dir() / "logs" / "trial-004.log"));
}

TEST_F(SweepTest, RandomDrawsStayInTheirRangesAndTwoRunAtOnce) {
  const Result r = sweep({"--sweep", "lr=loguniform(0.01,0.3)", "--sweep", "label=a,b", "--sweep-random", "3",
                          "--sweep-parallel", "2", "--set", "steps=5"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.err, "2 at a time (--sweep-parallel)")) << r.err;
  const json record = file_json(sweep_dir() / "sweep.json");
  ASSERT_EQ(record["trials"].size(), 3u);
  for (int i = 1; i <= 3; ++i) {
    const std::string trial = "trial-00" + std::to_string(i);
    const json config = trial_config(trial);
    const double lr = config["lr"].get<double>();
    EXPECT_GE(lr, 0.01) << trial;
    EXPECT_LE(lr, 0.3) << trial;
    EXPECT_TRUE(config["label"] == "a" || config["label"] == "b") << config.dump();
    EXPECT_EQ(trial_summary(trial)["status"], "completed") << trial;
  }
  EXPECT_EQ(read_csv(sweep_dir() / "trials.csv").size(), 3u);
}

TEST_F(SweepTest, AStoppedSweepResumesWhereItStopped) {
  const std::vector<std::string> spec{"--sweep", "lr=0.01,0.02,0.03", "--sweep-parallel", "1", "--set", "steps=4000",
                                      "--set", "checkpoint_every=500"};
  std::vector<std::string> argv{host_path().string()};
  for (const auto& a : args(spec)) argv.push_back(a);
  RunOptions o;
  o.cwd = tmp();
  {
    Process p(argv, o);
    // Stop it (SIGTERM to the host and its trials, as a scheduler does) once the first trial
    // has completed: the next one is then loading or training.
    const auto deadline = std::chrono::steady_clock::now() + kSweepTimeout;
    while (std::chrono::steady_clock::now() < deadline && p.running() &&
           !fs::exists(sweep_dir() / "trial-001" / "summary.json"))
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_TRUE(p.running()) << "the sweep ended before it could be stopped:\n" << p.stderr_so_far();
    ::kill(-p.pid(), SIGTERM);
    const Result stopped = p.wait(kSweepTimeout);
    EXPECT_EQ(stopped.exit_code, 75) << stopped.describe();
    EXPECT_TRUE(contains(stopped.err, "--resume")) << stopped.err;
  }
  ASSERT_EQ(trial_summary("trial-001")["status"], "completed");
  EXPECT_FALSE(fs::exists(sweep_dir() / "trial-003" / "summary.json")) << "no trial starts after the stop";
  const std::string first = read_file(sweep_dir() / "trial-001" / "summary.json");

  // Another sweep in its folder, or other values, are refused; the same command continues it.
  Result r = sweep(spec);
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "holds a sweep, which --resume continues")) << r.err;
  std::vector<std::string> other = spec;
  other[1] = "lr=0.5";
  other.push_back("--resume");
  r = sweep(other);
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "was started with")) << r.err;

  std::vector<std::string> resume = spec;
  resume.push_back("--resume");
  r = sweep(resume);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.err, "completed before, kept")) << r.err;
  EXPECT_EQ(read_file(sweep_dir() / "trial-001" / "summary.json"), first) << "a finished trial is not run again";
  for (const char* trial : {"trial-002", "trial-003"}) EXPECT_EQ(trial_summary(trial)["status"], "completed") << trial;
  EXPECT_EQ(read_csv(sweep_dir() / "summary.csv").size(), 3u);
}

TEST_F(SweepTest, BadSpecsFailBeforeAnyTrialNamingWhatIsWrong) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--sweep", "lr"}, "--sweep 'lr': expected KEY=VALUES"},
      {{"--sweep", "lr="}, "no values after '='"},
      {{"--sweep", "lr=0.1,,0.2"}, "an empty value"},
      {{"--sweep", "nosuch=1,2"}, "sweep trial nosuch=1: config field 'nosuch' is unknown"},
      {{"--sweep", "lr=fast,0.1"}, "config field 'lr'"},
      {{"--sweep", "lr=loguniform(0.01,0.1)"}, "needs --sweep-random N"},
      {{"--sweep", "lr=loguniform(0.1,0.01)", "--sweep-random", "2"}, "LOW must be below HIGH"},
      {{"--sweep", "lr=uniform(0.1)", "--sweep-random", "2"}, "takes two bounds"},
      {{"--sweep", "lr=0.1", "--sweep", "lr=0.2"}, "the key 'lr' is swept twice"},
      {{"--seeds", "0"}, "the number of seeds must be 1 to"},
      {{"--seeds", "2", "--sweep", "seed=1,2"}, "both set the seed"},
      {{"--sweep", "lr=0.1", "--sweep-random", "0"}, "--sweep-random must be at least 1"},
      {{"--sweep", "lr=0.1", "--sweep-parallel", "many"}, "--sweep-parallel must be auto or a whole number"},
      {{"--sweep", "lr=0.1", "--nproc-per-node", "2"}, "cannot be combined with a sweep"},
  };
  for (const auto& [extra, message] : cases) {
    const Result r = sweep(extra);
    EXPECT_EQ(r.exit_code, 2) << r.describe();
    EXPECT_TRUE(contains(r.err, message)) << "expected '" << message << "' in:\n" << r.err;
    EXPECT_FALSE(fs::exists(sweep_dir())) << "nothing written for " << extra[0] << " " << extra[1];
  }
  // Outside a run, the sweep's options are refused.
  const Result r = host({"--probe", "--sweep", "lr=0.1"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "--sweep only applies with --algorithm")) << r.err;
}

}  // namespace
}  // namespace mlhost::cli_test
