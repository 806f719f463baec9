// Environment libraries loaded by path (mlh/rl/environment_library.hpp): the example grid world
// (examples/grid-world-env, built in the tree) stepped by VectorEnv, seeded, snapshot and
// restored exactly; and every fault a library can have refused at load or stopped at the
// step, with a message naming the library and the problem (bad_env.cpp's libraries).
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <mlh/plugin.hpp>

#include "env/env.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace {

using ppo::EnvLibrary;
using ppo::LibraryEnv;

std::string bad_env(const std::string& kind) {
  return std::string(PPO_TEST_BAD_ENV_DIR) + "/libppo_test_bad_env_" + kind + ".so";
}

// The message of the mlh::Error that f throws ("" when none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const mlh::Error& e) {
    return e.what();
  }
  return "";
}

ppo::EnvFactory factory(const std::string& path, const std::string& settings = "{}") {
  auto library = EnvLibrary::open(path);
  return [library, settings] { return std::make_unique<LibraryEnv>(library, settings); };
}

// Steps env 0..n-1 with action 1 `steps` times.
void run(ppo::VectorEnv& v, int steps) {
  std::vector<int> actions(v.num_envs(), 1);
  for (int i = 0; i < steps; ++i) v.step(actions.data());
}

TEST(LibraryEnv, TheGridWorldRunsInAVectorEnvAsTheBuiltInOnesDo) {
  ppo::VectorEnv v(factory(PPO_TEST_GRID_WORLD, R"({"size": 4, "max_steps": 6})"), 3, 42);
  EXPECT_EQ(v.observation_shape(), std::vector<int64_t>({2}));
  EXPECT_EQ(v.num_actions(), 4);
  EXPECT_EQ(v.env(0).name(), "grid-world");
  v.reset();
  std::vector<int> right(3, 3), down(3, 1);
  for (int i = 0; i < 3; ++i) v.step(right.data());  // every agent at the right wall
  for (int i = 0; i < 3; ++i) v.step(down.data());   // and down to the goal: solved
  // Each agent's first episode ends solved (one that started nearer may solve a second).
  ASSERT_GE(v.finished_episodes().size(), 3u);
  for (const ppo::EpisodeRecord& e : v.finished_episodes()) {
    EXPECT_TRUE(e.solved);
    EXPECT_FALSE(e.truncated);
    EXPECT_NEAR(e.episode_return, 1.0 - 0.05 * (e.length - 1), 1e-6);
  }
  // Seeded: another VectorEnv with the same seed starts where this one did.
  ppo::VectorEnv a(factory(PPO_TEST_GRID_WORLD), 4, 7), b(factory(PPO_TEST_GRID_WORLD), 4, 7);
  a.reset();
  b.reset();
  EXPECT_EQ(a.observations(), b.observations());
}

TEST(LibraryEnv, ACheckpointedVectorEnvResumesExactlyThroughSnapshotAndRestore) {
  ppo::VectorEnv a(factory(PPO_TEST_GRID_WORLD), 4, 3);
  a.reset();
  std::vector<int> actions = {0, 1, 2, 3};
  for (int i = 0; i < 7; ++i) a.step(actions.data());
  const nlohmann::json saved = a.state();
  ASSERT_TRUE(saved[0].contains("snapshot")) << saved.dump();
  ppo::VectorEnv b(factory(PPO_TEST_GRID_WORLD), 4, 999);
  b.reset();
  b.load_state(saved);
  for (int i = 0; i < 40; ++i) {
    a.step(actions.data());
    b.step(actions.data());
    ASSERT_EQ(a.observations(), b.observations()) << "step " << i;
    ASSERT_EQ(a.rewards(), b.rewards()) << "step " << i;
  }
}

TEST(LibraryEnv, BadSettingsAreTheLibrarysMessage) {
  const std::string m = error_of([] { LibraryEnv e(EnvLibrary::open(PPO_TEST_GRID_WORLD), R"({"size": 1})"); });
  EXPECT_NE(m.find(std::string("environment library '") + PPO_TEST_GRID_WORLD + "' (grid-world): create"), std::string::npos) << m;
  EXPECT_NE(m.find("setting 'size' must be 2 to 32, got 1"), std::string::npos) << m;
}

TEST(LibraryEnv, WhatIsNoEnvironmentIsRefusedAtLoad) {
  const std::string missing = error_of([] { EnvLibrary::open("/nonexistent/libenv.so"); });
  EXPECT_NE(missing.find("environment library '/nonexistent/libenv.so' (config field 'library.path'): no such file"),
            std::string::npos)
      << missing;
  const std::string text = ::testing::TempDir() + "/not_a_library.so";
  std::ofstream(text) << "not an ELF file\n";
  const std::string garbage = error_of([&] { EnvLibrary::open(text); });
  EXPECT_NE(garbage.find("'" + text + "' (config field 'library.path'): cannot be loaded: "), std::string::npos) << garbage;
  const std::string no_entry = error_of([] { EnvLibrary::open(bad_env("no_entry")); });
  EXPECT_NE(no_entry.find(bad_env("no_entry") + "' (config field 'library.path'): not an mlhost environment: it "
                          "exports no mlh_rl_env_entry"),
            std::string::npos)
      << no_entry;
  const std::string abi = error_of([] { EnvLibrary::open(bad_env("wrong_abi")); });
  EXPECT_NE(abi.find("it speaks environment ABI 2.0, this host speaks 1.x: rebuild it against this mlhost's SDK"),
            std::string::npos)
      << abi;
  EXPECT_NE(error_of([] { EnvLibrary::open(""); }).find("config field 'library.path': no environment library given"), std::string::npos);
}

// The faults that show while running: each stops the run with the library, the step and
// what went wrong.
TEST(LibraryEnv, AFaultyStepStopsNamingTheLibraryTheStepAndTheProblem) {
  struct Case {
    std::string kind, expected;
  };
  const std::vector<Case> cases = {
      {"throw_step", "step 1 of episode 2 (5 steps of this env in all), action 1 failed: uncaught exception: the "
                     "simulator diverged"},
      {"nan_obs", "the observation of step 1 of episode 2 (5 steps of this env in all) holds nan at index 1"},
      {"inf_reward", "the reward of step 1 of episode 2 (5 steps of this env in all) is inf"},
      {"overrun", "step 1 of episode 2 (5 steps of this env in all) wrote past its observation of 3 floats (shape [3])"},
  };
  for (const Case& c : cases) {
    ppo::VectorEnv v(factory(bad_env(c.kind)), 1, 1);
    v.reset();
    run(v, 4);  // the first episode: 4 steps, then truncated
    const std::string m = error_of([&] { run(v, 1); });
    EXPECT_NE(m.find("environment library '" + bad_env(c.kind) + "' (bad-env): " + c.expected), std::string::npos)
        << c.kind << ": " << m;
  }
}

TEST(LibraryEnv, AThrowingResetAndInstancesOfAnotherShapeAreStopped) {
  const std::string reset = error_of([] {
    ppo::VectorEnv v(factory(bad_env("throw_reset")), 2, 1);
    v.reset();
  });
  EXPECT_NE(reset.find("(bad-env): reset of episode 1 failed: uncaught exception: no level to start"),
            std::string::npos)
      << reset;
  auto library = EnvLibrary::open(bad_env("shapes"));
  LibraryEnv first(library, "{}");
  const std::string shapes = error_of([&] { LibraryEnv second(library, "{}", first.observation_shape()); });
  EXPECT_NE(shapes.find("(bad-env): an instance has observation shape [4], the first one had [3]"), std::string::npos)
      << shapes;
}

std::string continuous_env(const std::string& kind) {
  return std::string(PPO_TEST_CONTINUOUS_ENV_DIR) + "/libppo_test_continuous_env_" + kind + ".so";
}

TEST(LibraryEnv, ALibraryBuiltAgainstTheFrozenAbi10HeaderLoadsAndPlays) {
  auto library = EnvLibrary::open(PPO_TEST_FROZEN_ENV_V1_0);
  EXPECT_EQ(library->table().abi_minor, 0u);
  EXPECT_EQ(library->minor(), 0u);  // the newer host speaks the library's minor
  EXPECT_FALSE(library->has_continuous_actions());
  ppo::VectorEnv v([library] { return std::make_unique<LibraryEnv>(library, "{}"); }, 2, 5);
  EXPECT_EQ(v.num_actions(), 2);
  EXPECT_EQ(v.action_bounds().size(), 0);
  EXPECT_EQ(v.observation_shape(), std::vector<int64_t>{6});
  v.reset();
  run(v, 3);  // right from cell 1: cells 2, 3, 4
  EXPECT_FLOAT_EQ(v.observations()[4], 1.0f);
  EXPECT_FLOAT_EQ(v.rewards()[0], -0.01f);
  run(v, 1);  // the goal: terminated with reward 1, reset to cell 1
  EXPECT_EQ(v.terminated()[0], 1);
  EXPECT_FLOAT_EQ(v.rewards()[0], 1.0f);
  EXPECT_FLOAT_EQ(v.observations()[1], 1.0f);
  ASSERT_EQ(v.finished_episodes().size(), 2u);
  EXPECT_EQ(v.finished_episodes()[0].length, 4);
  EXPECT_TRUE(v.finished_episodes()[0].solved);
}

TEST(LibraryEnv, ALibraryBuiltAgainstTheFrozenAbi11HeaderLoadsAndTakesContinuousActions) {
  auto library = EnvLibrary::open(PPO_TEST_FROZEN_ENV_V1_1);
  EXPECT_EQ(library->table().abi_minor, 1u);
  EXPECT_EQ(library->minor(), 1u);
  EXPECT_TRUE(library->has_continuous_actions());
  ppo::VectorEnv v([library] { return std::make_unique<LibraryEnv>(library, "{}"); }, 2, 5);
  EXPECT_EQ(v.num_actions(), 0);
  ASSERT_EQ(v.action_bounds().size(), 1);
  EXPECT_EQ(v.action_bounds().low[0], -1.0f);
  EXPECT_EQ(v.action_bounds().high[0], 1.0f);
  EXPECT_EQ(v.observation_shape(), std::vector<int64_t>{1});
  v.reset();
  const std::vector<float> start = v.observations();
  // The library refuses an action outside [-1, 1]: 4 and -9 pass clipped to 1 and -1.
  const std::vector<float> actions{4.0f, -9.0f};
  v.step_continuous(actions.data());
  EXPECT_NEAR(v.observations()[0], start[0] + 0.1f, 1e-6);
  EXPECT_NEAR(v.observations()[1], start[1] - 0.1f, 1e-6);
  EXPECT_NEAR(v.rewards()[1], -std::abs(start[1] - 0.1f), 1e-6);
  for (int i = 1; i < 20; ++i) v.step_continuous(actions.data());
  EXPECT_EQ(v.truncated()[0], 1) << "cut off after 20 steps";
  ASSERT_EQ(v.finished_episodes().size(), 2u);
  EXPECT_EQ(v.finished_episodes()[0].length, 20);
}

TEST(LibraryEnv, AContinuousLibraryTakesClippedActionsAndResumesExactly) {
  auto library = EnvLibrary::open(continuous_env("good"));
  EXPECT_EQ(library->minor(), static_cast<uint32_t>(MLH_RL_ENV_ABI_MINOR));
  EXPECT_TRUE(library->has_continuous_actions());
  ppo::VectorEnv v([library] { return std::make_unique<LibraryEnv>(library, "{}"); }, 2, 9);
  EXPECT_EQ(v.num_actions(), 0);
  ASSERT_EQ(v.action_bounds().size(), 1);
  EXPECT_EQ(v.action_bounds().low[0], -1.0f);
  EXPECT_EQ(v.action_bounds().high[0], 1.0f);
  v.reset();
  const std::vector<float> start = v.observations();
  // Out of bounds both ways: the library throws on anything outside [-1, 1], so a step that
  // passes shows the vector clipped them.
  const std::vector<float> actions{5.0f, -3.0f};
  v.step_continuous(actions.data());
  EXPECT_NEAR(v.observations()[0], start[0] + 0.1f, 1e-6);
  EXPECT_NEAR(v.observations()[1], start[1] - 0.1f, 1e-6);
  EXPECT_NEAR(v.rewards()[0], -std::abs(start[0] + 0.1f), 1e-6);
  const std::string discrete = error_of([&] {
    std::vector<int> a(2, 0);
    v.step(a.data());
  });
  EXPECT_NE(discrete.find("(point): takes continuous actions, not discrete ones"), std::string::npos) << discrete;

  // Checkpointed mid-episode, a vector restored into other seeds goes on as the original.
  const nlohmann::json state = v.state();
  ppo::VectorEnv w([library] { return std::make_unique<LibraryEnv>(library, "{}"); }, 2, 1234);
  w.reset();
  w.load_state(state);
  const std::vector<float> next{0.25f, -0.5f};
  for (int i = 0; i < 60; ++i) {  // past the 50-step cut-off and into new episodes
    v.step_continuous(next.data());
    w.step_continuous(next.data());
    ASSERT_EQ(v.observations(), w.observations()) << "step " << i;
    ASSERT_EQ(v.rewards(), w.rewards()) << "step " << i;
  }
}

TEST(LibraryEnv, ContinuousActionsWithBadBoundsOrBesideDiscreteOnesAreRefused) {
  const std::string bounds = error_of([] { LibraryEnv e(EnvLibrary::open(continuous_env("bad_bounds")), "{}"); });
  EXPECT_NE(bounds.find("(point): action 0's bounds [1.000000, -1.000000] (low <= high, no NaN)"), std::string::npos)
      << bounds;
  const std::string both = error_of([] { LibraryEnv e(EnvLibrary::open(continuous_env("both_kinds")), "{}"); });
  EXPECT_NE(both.find("(point): it describes both 2 discrete actions and 1 continuous ones"), std::string::npos)
      << both;
}

}  // namespace
