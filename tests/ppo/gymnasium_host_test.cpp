// Gymnasium environments (config env=gymnasium) through the real host, with the interpreter of
// the repo's .venv (skipped, saying why, where it lacks gymnasium): Gymnasium's own CartPole-v1
// and Pendulum-v1 learn past their margins with the PPO loop in C++ and each environment in a
// Python worker; what cannot start is refused before anything trains (exit 2, no run folder);
// a fault mid-run names the environment and the step, exits as the same fault at the first
// step would, and leaves the log and the checkpoints.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "algorithm_host_test.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

HostResult host(const std::string& args) { return run_host(PPO_HOST_BIN, PPO_PLUGIN_DIR, args); }

const std::string kGym = std::string(" --algorithm ppo --device cpu --threads 1 --set env=gymnasium") +
                         " --set gymnasium.python=" + PPO_TEST_VENV_PYTHON +
                         " --set gymnasium.pythonpath=" + PPO_TEST_GYMNASIUM_ENVS;

class PpoGymnasiumHost : public HostTempDirTest {
 protected:
  PpoGymnasiumHost() : HostTempDirTest("ppo-gymnasium-") {}
  void SetUp() override {
    HostTempDirTest::SetUp();
    const std::string check = std::string(PPO_TEST_VENV_PYTHON) + " -c 'import gymnasium' 2>/dev/null";
    if (std::system(check.c_str()) != 0)
      GTEST_SKIP() << PPO_TEST_VENV_PYTHON << " cannot import gymnasium (bash scripts/torch-venv.sh --peers installs it)";
  }
  double avg_return(const std::string& run) {
    return read_json_file(run + "/summary.json")["result"]["avg_return_100"].get<double>();
  }
};

// A random policy averages about 22 on CartPole-v1; PPO's defaults pass 100 by 100k steps on
// any seed (270 here).
TEST_F(PpoGymnasiumHost, GymnasiumsCartPoleLearns) {
  const std::string run = dir_ + "/cartpole";
  const HostResult r = host(kGym + " --set gymnasium.id=CartPole-v1 --set total_timesteps=100352 --run-dir " + run);
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("ppo on gymnasium environment 'CartPole-v1' (4 Python workers)"), std::string::npos)
      << r.output;
  EXPECT_GT(avg_return(run), 100.0) << r.output;
  const HostResult eval = host("--algorithm ppo --run-dir " + run + " --resume --command eval --set eval_episodes=5");
  ASSERT_EQ(eval.rc, 0) << eval.output;
  EXPECT_NE(eval.output.find("CartPole-v1: mean return"), std::string::npos) << eval.output;
}

// Pendulum-v1 from Gymnasium with the pendulum preset: the same margin as the built-in
// Pendulum's (PpoTraining.PendulumLearnsWithAGaussianPolicyOnNormalizedObservationsAndRewards).
TEST_F(PpoGymnasiumHost, GymnasiumsPendulumLearnsWithContinuousActions) {
  const std::string run = dir_ + "/pendulum";
  const HostResult r =
      host(kGym + " --set preset=pendulum --set env=gymnasium --set gymnasium.id=Pendulum-v1 "
                  "--set total_timesteps=163840 --run-dir " + run);
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_GT(avg_return(run), -800.0) << r.output;
}

TEST_F(PpoGymnasiumHost, WhatCannotStartIsRefusedBeforeAnythingTrains) {
  const std::string run = dir_ + "/refused";
  const HostResult unknown = host(kGym + " --set gymnasium.id=NoSuchEnv-v0 --run-dir " + run);
  EXPECT_EQ(unknown.rc, 2) << unknown.output;
  EXPECT_NE(unknown.output.find("gymnasium environment 'NoSuchEnv-v0': gymnasium.id 'NoSuchEnv-v0': NameNotFound"),
            std::string::npos)
      << unknown.output;
  EXPECT_FALSE(fs::exists(run)) << "no run folder";
  const HostResult dict = host(kGym + " --set gymnasium.id=mlh_test_envs:DictObservation --run-dir " + run);
  EXPECT_EQ(dict.rc, 2) << dict.output;
  EXPECT_NE(dict.output.find("not a Box"), std::string::npos) << dict.output;
  const HostResult missing = host(" --algorithm ppo --set env=gymnasium --run-dir " + run);
  EXPECT_EQ(missing.rc, 2) << missing.output;
  EXPECT_NE(missing.output.find("gymnasium.id"), std::string::npos) << missing.output;
  const HostResult wrapper = host(kGym + " --set gymnasium.id=CartPole-v1 --set 'gymnasium.wrappers=[\"TimeLimit\"]'" +
                                  " --run-dir " + run);
  EXPECT_EQ(wrapper.rc, 2) << wrapper.output;
  EXPECT_NE(wrapper.output.find("gymnasium.wrappers"), std::string::npos) << wrapper.output;
  EXPECT_FALSE(fs::exists(run)) << "no run folder";
}

TEST_F(PpoGymnasiumHost, AFaultMidRunNamesTheEnvironmentAndTheStepAndKeepsWhatWasWritten) {
  // The raise comes at step 1500 of one env: past the first checkpoint (iteration 2, 1024 steps).
  const std::string run = dir_ + "/raises";
  const HostResult r = host(kGym + " --set gymnasium.id=mlh_test_envs:RaisesAtStep --set 'gymnasium.kwargs={\"at\": 1500}'" +
                            " --set checkpoint_every=2 --set total_timesteps=20480 --run-dir " + run);
  EXPECT_EQ(r.rc, 1) << r.output;
  EXPECT_NE(r.output.find("(1500 steps of this env in all) failed: ValueError: the corridor broke at step 1500"),
            std::string::npos)
      << r.output;
  EXPECT_TRUE(fs::exists(run + "/checkpoints")) << r.output;
  std::ifstream log(run + "/log.txt");
  std::stringstream text;
  text << log.rdbuf();
  EXPECT_NE(text.str().find("the corridor broke at step 1500"), std::string::npos) << text.str();
  // A NaN observation is the environment's to fix: exit 2 however late it comes.
  const std::string nan_run = dir_ + "/nan";
  const HostResult nan = host(kGym + " --set gymnasium.id=mlh_test_envs:NanAtStep --set 'gymnasium.kwargs={\"at\": 1500}'" +
                              " --set checkpoint_every=2 --set total_timesteps=20480 --run-dir " + nan_run);
  EXPECT_EQ(nan.rc, 2) << nan.output;
  EXPECT_NE(nan.output.find("holds nan at index 0"), std::string::npos) << nan.output;
}

// A terminal's Ctrl-C (SIGINT to the host's process group) stops a run with Python workers as
// any run: it saves, exits 130, is resumable, and --resume trains it to the end (the workers
// end with the training worker, none left behind to fail the save).
TEST_F(PpoGymnasiumHost, CtrlCStopsTheRunCleanlyAndItResumes) {
  const std::string run = dir_ + "/stopped";
  const std::string args = kGym + " --set gymnasium.id=CartPole-v1 --set total_timesteps=200704 --run-dir " + run;
  const std::string cache = dir_ + "/cache";
  const std::string line = "MLH_NO_CALIBRATE=1 MLH_MACHINE_SHARING=dedicated XDG_CACHE_HOME='" + cache +
                           "' XDG_CONFIG_HOME='" + cache + "' exec " + PPO_HOST_BIN +
                           " --no-default-plugin-dir --plugin-dir " + PPO_PLUGIN_DIR + " " + args + " > '" + dir_ +
                           "/stopped.log' 2>&1";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setpgid(0, 0);  // a group of its own, as a terminal's foreground job
    execl("/bin/sh", "sh", "-c", line.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);
  // Until it has trained a while (its metrics file has lines), at most a minute.
  for (int i = 0; i < 600 && !(fs::exists(run + "/metrics.jsonl") && fs::file_size(run + "/metrics.jsonl") > 2000); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(::kill(-pid, SIGINT), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  std::ifstream log(dir_ + "/stopped.log");
  const std::string output((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  ASSERT_TRUE(WIFEXITED(status)) << output;
  EXPECT_EQ(WEXITSTATUS(status), 130) << output;
  const json summary = read_json_file(run + "/summary.json");
  EXPECT_EQ(summary["status"], "cancelled") << summary.dump();
  const HostResult resumed = host(args + " --resume");
  ASSERT_EQ(resumed.rc, 0) << resumed.output;
  EXPECT_EQ(read_json_file(run + "/summary.json")["result"]["global_step"], 200704);
}

}  // namespace
