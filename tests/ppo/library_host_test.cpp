// Environment libraries (config env=library) through the real host: the example grid world
// (examples/grid-world-env, built in the tree) learns, and a run stopped and resumed ends as
// one that was never stopped (its env snapshots); libraries and networks that do not fit are
// refused before anything trains; a library that fails mid-run stops it with a message naming
// the library and the step, and keeps what the run wrote before.
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "algorithm_host_test.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

HostResult host(const std::string& args) { return run_host(PPO_HOST_BIN, PPO_PLUGIN_DIR, args); }

std::string bad_env(const std::string& kind) {
  return std::string(PPO_TEST_BAD_ENV_DIR) + "/libppo_test_bad_env_" + kind + ".so";
}

const std::string kGrid = std::string(" --algorithm ppo --device cpu --threads 1 --set env=library --set library.path=") +
                          PPO_TEST_GRID_WORLD + " --set num_envs=8 --set num_steps=64 --set lr=0.002";

class PpoLibraryHost : public HostTempDirTest {
 protected:
  PpoLibraryHost() : HostTempDirTest("ppo-library-") {}
};

// The metric values (not times) of a run's metrics.jsonl, as "name@step=value" lines.
std::vector<std::string> metric_values(const std::string& run) {
  std::vector<std::string> out;
  std::ifstream in(run + "/metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    const json m = json::parse(line, nullptr, false);
    if (!m.is_object() || m.value("name", "").rfind("perf/", 0) == 0) continue;
    out.push_back(m["name"].get<std::string>() + "@" + m["step"].dump() + "=" + m["value"].dump());
  }
  return out;
}

TEST_F(PpoLibraryHost, TheGridWorldLearnsAndAStoppedRunResumesExactly) {
  const std::string whole = dir_ + "/whole";
  const HostResult straight = host(kGrid + " --run-dir " + whole + " --set total_timesteps=8192");
  ASSERT_EQ(straight.rc, 0) << straight.output;
  EXPECT_NE(straight.output.find("(grid-world): network mlp"), std::string::npos) << straight.output;
  // 16 iterations: far above a random walk's -0.93 already.
  EXPECT_GT(read_json_file(whole + "/summary.json")["result"]["avg_return_100"].get<double>(), 0.3);

  const std::string legs = dir_ + "/legs";
  const HostResult first = host(kGrid + " --run-dir " + legs + " --set total_timesteps=8192 --max-steps 7");
  ASSERT_EQ(first.rc, 0) << first.output;
  const HostResult second = host(kGrid + " --run-dir " + legs + " --set total_timesteps=8192 --resume");
  ASSERT_EQ(second.rc, 0) << second.output;
  const std::vector<std::string> a = metric_values(whole), b = metric_values(legs);
  ASSERT_FALSE(a.empty());
  // What the second leg logged is what the straight run logged from the same iterations on.
  ASSERT_GE(a.size(), b.size());
  EXPECT_EQ(std::vector<std::string>(a.end() - static_cast<std::ptrdiff_t>(b.size() / 2), a.end()),
            std::vector<std::string>(b.end() - static_cast<std::ptrdiff_t>(b.size() / 2), b.end()));
  EXPECT_EQ(read_json_file(whole + "/summary.json")["result"]["avg_return_100"],
            read_json_file(legs + "/summary.json")["result"]["avg_return_100"]);
}

// Refused before anything trains: exit 2, the message, and no run folder left.
void expect_refused(const HostResult& r, const std::string& run, const std::string& what) {
  EXPECT_EQ(r.rc, 2) << r.output;
  EXPECT_NE(r.output.find(what), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(run)) << "the run folder is removed";
}

TEST_F(PpoLibraryHost, LibrariesAndNetworksThatDoNotFitAreRefusedBeforeAnythingTrains) {
  const std::string run = dir_ + "/run";
  expect_refused(host("--algorithm ppo --device cpu --set env=library --set library.path=" + dir_ +
                      "/missing.so --run-dir " + run),
                 run, "environment library '" + dir_ + "/missing.so' (config field 'library.path'): no such file");
  expect_refused(host("--algorithm ppo --device cpu --set env=library --set library.path=" + bad_env("wrong_abi") +
                      " --run-dir " + run),
                 run, "it speaks environment ABI 2.0, this host speaks 1.x");
  expect_refused(host(kGrid + " --set network.kind=recursive --run-dir " + run), run,
                 "config field 'network.kind': environment library '" + std::string(PPO_TEST_GRID_WORLD) +
                     "' (grid-world) gives observations of shape [2], a flat vector, which recursive cannot take: "
                     "use mlp");
  expect_refused(host(kGrid + " --set library.settings.size=1 --run-dir " + run), run,
                 "(grid-world): create (settings {\"size\":1}) failed: grid-world: setting 'size' must be 2 to 32, got 1");
  const std::string planes = " --algorithm ppo --device cpu --set env=library --set library.path=" + bad_env("planes");
  expect_refused(host(planes + " --set network.kind=mlp --run-dir " + run), run,
                 "(bad-env) gives observations of shape [2, 3, 3], {planes, height, width}, which mlp (for a flat "
                 "vector) cannot take: use recursive or resnet (or auto)");
  expect_refused(host("--algorithm ppo --device cpu --set env=library --set library.path=" + bad_env("rank2") +
                      " --run-dir " + run),
                 run, "(bad-env) gives observations of shape [3, 3]: PPO's networks take a flat vector (mlp) or "
                      "{planes, height, width} (recursive, resnet); flatten it in the environment");
  expect_refused(host("--algorithm ppo --device cpu --set env=library --run-dir " + run), run,
                 "config field 'library.path': env=library needs the environment's shared library");
}

// {planes, height, width} observations train the puzzles' recursive network (auto's choice).
TEST_F(PpoLibraryHost, PlanesTrainTheRecursiveNetwork) {
  const std::string run = dir_ + "/planes";
  const HostResult r = host("--algorithm ppo --device cpu --set env=library --set library.path=" + bad_env("planes") +
                            " --set network.hidden_dim=16 --set network.num_heads=2 --set network.num_recursive_steps=1"
                            " --set num_envs=2 --set num_steps=16 --set total_timesteps=64 --run-dir " + run);
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("(bad-env): network recursive"), std::string::npos) << r.output;
  EXPECT_EQ(read_json_file(run + "/network.json")["observation_shape"], json({2, 3, 3}));
}

// A step that throws after the run's first checkpoints: the run stops (not 0), naming the
// library, the step and the exception's message; its checkpoints and metrics stay.
TEST_F(PpoLibraryHost, AFailingStepStopsTheRunNamingTheLibraryAndKeepsWhatWasWritten) {
  const std::string run = dir_ + "/run";
  const HostResult r = host("--algorithm ppo --device cpu --threads 1 --set env=library --set library.path=" +
                            bad_env("throw_late") + " --set num_envs=2 --set num_steps=64 --set checkpoint_every=2"
                            " --set total_timesteps=4096 --run-dir " + run);
  EXPECT_NE(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("environment library '" + bad_env("throw_late") +
                          "' (bad-env): step 4 of episode 150 (600 steps of this env in all), action"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("failed: uncaught exception: the simulator diverged"), std::string::npos) << r.output;
  int checkpoints = 0;
  for (const auto& e : fs::directory_iterator(run + "/checkpoints"))
    checkpoints += e.path().filename().string().rfind("step-", 0) == 0 ? 1 : 0;
  EXPECT_GE(checkpoints, 1) << "iterations 2-8 were checkpointed before the failure: " << r.output;
  EXPECT_FALSE(metric_values(run).empty());

  const std::string nan_run = dir_ + "/nan";
  const HostResult nan = host("--algorithm ppo --device cpu --set env=library --set library.path=" +
                              bad_env("nan_obs") + " --run-dir " + nan_run);
  EXPECT_EQ(nan.rc, 2) << nan.output;
  EXPECT_NE(nan.output.find("(bad-env): the observation of step 1 of episode 2 (5 steps of this env in all) holds "
                            "nan at index 1"),
            std::string::npos)
      << nan.output;
}

// The same fault late in a run exits as it does early (2: the environment's to fix), keeping
// what the run wrote, with the error in its log; a crash inside the library names it and how
// far the run got, on the terminal and in the log.
TEST_F(PpoLibraryHost, AFaultLateInARunExitsAsAnEarlyOneAndACrashNamesTheLibrary) {
  const std::string options = " --set num_envs=2 --set num_steps=64 --set checkpoint_every=2 --set total_timesteps=4096";
  const std::string nan_run = dir_ + "/nan-late";
  const HostResult nan = host("--algorithm ppo --device cpu --threads 1 --set env=library --set library.path=" +
                              bad_env("nan_late") + options + " --run-dir " + nan_run);
  EXPECT_EQ(nan.rc, 2) << nan.output;
  const std::string fault = "the observation of step 4 of episode 150 (600 steps of this env in all) holds nan at index 1";
  EXPECT_NE(nan.output.find("training stopped on bad input: "), std::string::npos) << nan.output;
  EXPECT_NE(nan.output.find(fault), std::string::npos) << nan.output;
  EXPECT_NE(nan.output.find("what it wrote is kept in " + nan_run), std::string::npos) << nan.output;
  EXPECT_TRUE(fs::exists(nan_run + "/checkpoints")) << nan.output;
  EXPECT_FALSE(metric_values(nan_run).empty());
  std::ifstream nan_log(nan_run + "/log.txt");
  const std::string nan_log_text((std::istreambuf_iterator<char>(nan_log)), std::istreambuf_iterator<char>());
  EXPECT_NE(nan_log_text.find("[error] training stopped on bad input: "), std::string::npos) << nan_log_text;
  EXPECT_NE(nan_log_text.find(fault), std::string::npos) << nan_log_text;

  const std::string crash_run = dir_ + "/segv";
  const HostResult crash = host("--algorithm ppo --device cpu --threads 1 --set env=library --set library.path=" +
                                bad_env("segv") + options + " --run-dir " + crash_run);
  EXPECT_EQ(crash.rc, 1) << crash.output;
  const std::string where = "signal 11 (Segmentation fault) in " + bad_env("segv") + ", at ";
  EXPECT_NE(crash.output.find("worker killed by " + where), std::string::npos) << crash.output;
  std::ifstream crash_log(crash_run + "/log.txt");
  const std::string crash_log_text((std::istreambuf_iterator<char>(crash_log)), std::istreambuf_iterator<char>());
  EXPECT_NE(crash_log_text.find("[worker crash] " + where), std::string::npos) << crash_log_text;
  EXPECT_NE(read_json_file(crash_run + "/summary.json")["error"].get<std::string>().find(where), std::string::npos);
}

}  // namespace
