// Gymnasium environments in Python worker processes (env/gymnasium_env.hpp), with the
// interpreter of the repo's .venv (skipped, saying why, where it lacks gymnasium): Gymnasium's
// own CartPole-v1 and Pendulum-v1 stepped by VectorEnv, seeded and reproducible, with its
// autoreset and clipped continuous actions; a user's module:Class with a wrapper; and every
// way a worker can fail, refused or stopped with a message naming the environment.
#include <cmath>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>
#include <mlh/plugin.hpp>

#include "env/gymnasium_env.hpp"
#include "env/env.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace {

using ppo::GymnasiumEnv;
using ppo::GymnasiumSpec;

class GymnasiumEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string check = std::string(PPO_TEST_VENV_PYTHON) + " -c 'import gymnasium' 2>/dev/null";
    if (std::system(check.c_str()) != 0)
      GTEST_SKIP() << PPO_TEST_VENV_PYTHON << " cannot import gymnasium (bash scripts/torch-venv.sh --peers installs it)";
  }
  static GymnasiumSpec spec(const std::string& id) {
    GymnasiumSpec s;
    s.id = id;
    s.kwargs = nlohmann::json::object();
    s.python = PPO_TEST_VENV_PYTHON;
    s.pythonpath = {PPO_TEST_GYMNASIUM_ENVS};
    return s;
  }
  static ppo::EnvFactory factory(const GymnasiumSpec& s) {
    return [s] { return std::make_unique<GymnasiumEnv>(s); };
  }
};

// The message of the mlh::Error that f throws ("" when none), and its code.
template <class F>
std::string error_of(F&& f, mlh_status* code = nullptr) {
  try {
    f();
  } catch (const mlh::Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "";
}

TEST_F(GymnasiumEnvTest, CartPoleStepsInWorkersReproduciblyWithGymnasiumsAutoreset) {
  ppo::VectorEnv a(factory(spec("CartPole-v1")), 3, 11), b(factory(spec("CartPole-v1")), 3, 11);
  EXPECT_EQ(a.observation_shape(), std::vector<int64_t>{4});
  EXPECT_EQ(a.num_actions(), 2);
  EXPECT_EQ(a.env(0).name(), "CartPole-v1");
  a.reset();
  b.reset();
  EXPECT_EQ(a.observations(), b.observations());
  EXPECT_NE(std::vector<float>(a.observations().begin(), a.observations().begin() + 4),
            std::vector<float>(a.observations().begin() + 4, a.observations().begin() + 8))
      << "each env has its own seed";
  // Pushing right always: every episode terminates (the pole falls) within a few dozen steps.
  const std::vector<int> right(3, 1);
  int ended = 0;
  for (int t = 0; t < 200; ++t) {
    a.step(right.data());
    b.step(right.data());
    ASSERT_EQ(a.observations(), b.observations()) << "step " << t;
    for (int i = 0; i < 3; ++i) {
      if (!a.terminated()[i]) continue;
      ++ended;
      // The final observation is the fallen pole's; the current one the next episode's start.
      const float* final = a.final_observation(i);
      EXPECT_TRUE(std::abs(final[2]) > 0.2 || std::abs(final[0]) > 2.4) << "angle " << final[2];
      EXPECT_LT(std::abs(a.observations()[i * 4 + 2]), 0.05f);
    }
  }
  EXPECT_GT(ended, 6);
  EXPECT_EQ(a.finished_episodes().size(), static_cast<size_t>(ended));
  EXPECT_FLOAT_EQ(static_cast<float>(a.finished_episodes()[0].episode_return),
                  static_cast<float>(a.finished_episodes()[0].length));  // +1 a step
}

TEST_F(GymnasiumEnvTest, PendulumTakesClippedContinuousActionsAndTruncatesAt200) {
  ppo::VectorEnv v(factory(spec("Pendulum-v1")), 2, 5);
  ASSERT_EQ(v.action_bounds().size(), 1);
  EXPECT_EQ(v.action_bounds().low[0], -2.0f);
  EXPECT_EQ(v.action_bounds().high[0], 2.0f);
  EXPECT_EQ(v.num_actions(), 0);
  v.reset();
  // Gymnasium's reward for a torque of 2 (the clipped 7): at most -0.004 (0.001 u^2).
  const std::vector<float> actions{7.0f, -7.0f};
  for (int t = 1; t <= 200; ++t) {
    v.step_continuous(actions.data());
    EXPECT_LE(v.rewards()[0], -0.004f + 1e-6f);
    EXPECT_GE(v.rewards()[0], -16.2736f - 1e-3f);  // pi^2 + 0.1 * 8^2 + 0.001 * 2^2
    ASSERT_EQ(v.truncated()[0], t == 200 ? 1 : 0) << "step " << t;
  }
}

TEST_F(GymnasiumEnvTest, AUsersClassWithAWrapperFromItsModule) {
  GymnasiumSpec s = spec("mlh_test_envs:Corridor");
  s.kwargs = {{"length", 5}};
  s.wrappers = {{{"name", "TimeLimit"}, {"max_episode_steps", 3}}};
  ppo::VectorEnv v(factory(s), 1, 3);
  EXPECT_EQ(v.observation_shape(), std::vector<int64_t>{5});
  EXPECT_EQ(v.env(0).name(), "Corridor");
  v.reset();
  const std::vector<int> left(1, 0);
  for (int t = 0; t < 3; ++t) v.step(left.data());  // never reaches the right end
  EXPECT_EQ(v.truncated()[0], 1);
  ASSERT_EQ(v.finished_episodes().size(), 1u);
  EXPECT_NEAR(v.finished_episodes()[0].episode_return, -0.03, 1e-6);
}

TEST_F(GymnasiumEnvTest, WhatCannotStartIsRefusedNamingTheEnvironment) {
  mlh_status code = MLH_OK;
  const std::string unknown = error_of([&] { GymnasiumEnv e(spec("NoSuchEnv-v0")); }, &code);
  EXPECT_NE(unknown.find("gymnasium environment 'NoSuchEnv-v0': gymnasium.id 'NoSuchEnv-v0': NameNotFound"),
            std::string::npos)
      << unknown;
  EXPECT_EQ(code, MLH_ERR_INVALID_ARGUMENT);
  const std::string dict = error_of([&] { GymnasiumEnv e(spec("mlh_test_envs:DictObservation")); });
  EXPECT_NE(dict.find("its observation space is Dict("), std::string::npos) << dict;
  EXPECT_NE(dict.find("not a Box"), std::string::npos) << dict;
  const std::string module = error_of([&] { GymnasiumEnv e(spec("no_such_module:Env")); });
  EXPECT_NE(module.find("gymnasium.id 'no_such_module:Env': ModuleNotFoundError"), std::string::npos) << module;
  const std::string syntax = error_of([&] { GymnasiumEnv e(spec("mlh_test_broken_env:Broken")); }, &code);
  EXPECT_NE(syntax.find("SyntaxError: invalid syntax (mlh_test_broken_env.py, line 6)"), std::string::npos) << syntax;
  EXPECT_EQ(syntax.find("importlib"), std::string::npos) << "Python's own frames are not the user's: " << syntax;
  EXPECT_EQ(code, MLH_ERR_INVALID_ARGUMENT);
  GymnasiumSpec wrapper = spec("CartPole-v1");
  wrapper.wrappers = {{{"name", "NoSuchWrapper"}}};
  const std::string w = error_of([&] { GymnasiumEnv e(wrapper); });
  EXPECT_NE(w.find("gymnasium.wrappers: 'NoSuchWrapper' is not one of gymnasium.wrappers'"), std::string::npos) << w;
  GymnasiumSpec python = spec("CartPole-v1");
  python.python = "/no/such/python";
  const std::string p = error_of([&] { GymnasiumEnv e(python); }, &code);
  EXPECT_NE(p.find("cannot start the Python interpreter '/no/such/python' (config field 'gymnasium.python')"),
            std::string::npos)
      << p;
  EXPECT_EQ(code, MLH_ERR_INVALID_ARGUMENT);
}

TEST_F(GymnasiumEnvTest, AFaultMidEpisodeNamesTheStepAndWhatHappened) {
  auto run_until_error = [](const GymnasiumSpec& s, mlh_status* code) {
    return error_of(
        [&] {
          ppo::VectorEnv v([s] { return std::make_unique<GymnasiumEnv>(s); }, 1, 1);
          v.reset();
          const std::vector<int> right(1, 1);
          for (int t = 0; t < 100; ++t) v.step(right.data());
        },
        code);
  };
  GymnasiumSpec s = spec("mlh_test_envs:RaisesAtStep");
  s.kwargs = {{"at", 12}};
  mlh_status code = MLH_OK;
  const std::string raised = run_until_error(s, &code);
  EXPECT_NE(raised.find("gymnasium environment 'mlh_test_envs:RaisesAtStep': step "), std::string::npos) << raised;
  EXPECT_NE(raised.find("(12 steps of this env in all) failed: ValueError: the corridor broke at step 12 (File \""),
            std::string::npos)
      << raised;
  EXPECT_NE(raised.find("mlh_test_envs.py\", line "), std::string::npos) << raised;
  EXPECT_EQ(code, MLH_ERR_INTERNAL);

  s.id = "mlh_test_envs:KilledAtStep";
  const std::string killed = run_until_error(s, &code);
  EXPECT_NE(killed.find("its Python worker is gone (it was killed by signal 9 (Killed))"), std::string::npos) << killed;
  EXPECT_NE(killed.find("(12 steps of this env in all)"), std::string::npos) << killed;

  s.id = "mlh_test_envs:NanAtStep";
  const std::string nan = run_until_error(s, &code);
  EXPECT_NE(nan.find("the observation of step "), std::string::npos) << nan;
  EXPECT_NE(nan.find("holds nan at index 0"), std::string::npos) << nan;
  EXPECT_EQ(code, MLH_ERR_INVALID_ARGUMENT);
}

}  // namespace
