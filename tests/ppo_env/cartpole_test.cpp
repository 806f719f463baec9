// CartPole-v1 dynamics against hand-computed Euler steps, its end conditions, and VectorEnv's
// autoreset and bookkeeping.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "env/cartpole.hpp"
#include "env/env.hpp"

namespace {

using ppo::CartPole;

// One gymnasium Euler step written out from the formulas, independently of CartPole::step.
std::array<double, 4> hand_step(std::array<double, 4> s, int action) {
  const double g = 9.8, mc = 1.0, mp = 0.1, l = 0.5, tau = 0.02;
  const double f = action == 1 ? 10.0 : -10.0;
  const double x = s[0], xd = s[1], th = s[2], thd = s[3];
  const double temp = (f + mp * l * thd * thd * std::sin(th)) / (mc + mp);
  const double thacc = (g * std::sin(th) - std::cos(th) * temp) /
                       (l * (4.0 / 3.0 - mp * std::cos(th) * std::cos(th) / (mc + mp)));
  const double xacc = temp - mp * l * thacc * std::cos(th) / (mc + mp);
  return {x + tau * xd, xd + tau * xacc, th + tau * thd, thd + tau * thacc};
}

TEST(CartPole, ShapeAndActions) {
  CartPole env;
  EXPECT_EQ(env.observation_shape(), std::vector<int64_t>{4});
  EXPECT_EQ(env.observation_size(), 4);
  EXPECT_EQ(env.num_actions(), 2);
  uint8_t mask[2] = {0, 0};
  env.action_mask(mask);
  EXPECT_EQ(mask[0], 1);
  EXPECT_EQ(mask[1], 1);
}

TEST(CartPole, EulerStepFromZeroStateByHand) {
  // From rest, pushing right: temp = 10/1.1, thetaacc = -temp / (0.5 * (4/3 - 0.1/1.1)),
  // xacc = temp - 0.05 * thetaacc / 1.1. Positions do not move in the first Euler step
  // (they use the old velocities, which are 0).
  CartPole env;
  env.set_state({0.0, 0.0, 0.0, 0.0});
  float obs[4];
  const ppo::StepResult r = env.step(1, obs);
  const double temp = 10.0 / 1.1;
  const double thacc = -temp / (0.5 * (4.0 / 3.0 - 0.1 / 1.1));
  const double xacc = temp - 0.05 * thacc / 1.1;
  EXPECT_DOUBLE_EQ(env.state()[0], 0.0);
  EXPECT_DOUBLE_EQ(env.state()[1], 0.02 * xacc);
  EXPECT_DOUBLE_EQ(env.state()[2], 0.0);
  EXPECT_DOUBLE_EQ(env.state()[3], 0.02 * thacc);
  EXPECT_NEAR(env.state()[1], 0.195121951, 1e-8);
  EXPECT_NEAR(env.state()[3], -0.292682926, 1e-8);
  EXPECT_FLOAT_EQ(obs[1], static_cast<float>(0.02 * xacc));
  EXPECT_FLOAT_EQ(obs[3], static_cast<float>(0.02 * thacc));
  EXPECT_EQ(r.reward, 1.0f);
  EXPECT_FALSE(r.terminated);
  EXPECT_FALSE(r.truncated);
  EXPECT_FALSE(r.solved);
  EXPECT_FALSE(r.invalid_move);
}

TEST(CartPole, TwoStepsFromKnownStateMatchFormulas) {
  CartPole env;
  std::array<double, 4> s = {0.01, -0.2, 0.03, 0.4};
  env.set_state(s);
  float obs[4];
  s = hand_step(s, 0);
  env.step(0, obs);
  for (int i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(env.state()[i], s[i]) << i;
  // The positions use the old velocities: x1 = x0 + tau * x_dot0.
  EXPECT_DOUBLE_EQ(env.state()[0], 0.01 + 0.02 * -0.2);
  EXPECT_DOUBLE_EQ(env.state()[2], 0.03 + 0.02 * 0.4);
  s = hand_step(s, 1);
  env.step(1, obs);
  for (int i = 0; i < 4; ++i) {
    EXPECT_DOUBLE_EQ(env.state()[i], s[i]) << i;
    EXPECT_EQ(obs[i], static_cast<float>(s[i])) << i;
  }
  EXPECT_EQ(env.steps(), 2);
}

TEST(CartPole, TerminatesPastThresholdsWithReward) {
  CartPole env;
  float obs[4];
  // x crosses 2.4 this step: x = 2.39 + 0.02 * 1.0 = 2.41.
  env.set_state({2.39, 1.0, 0.0, 0.0});
  ppo::StepResult r = env.step(1, obs);
  EXPECT_TRUE(r.terminated);
  EXPECT_FALSE(r.truncated);
  EXPECT_EQ(r.reward, 1.0f);
  // Inside the boundary: x = 2.3 + 0.02 = 2.32.
  env.set_state({2.3, 1.0, 0.0, 0.0});
  r = env.step(1, obs);
  EXPECT_FALSE(r.terminated);
  env.set_state({-2.39, -1.0, 0.0, 0.0});
  EXPECT_TRUE(env.step(0, obs).terminated);
  const double th = CartPole::kThetaThreshold;
  EXPECT_NEAR(th, 0.20943951, 1e-7);
  env.set_state({0.0, 0.0, th - 0.001, 0.1});  // theta -> th + 0.001
  EXPECT_TRUE(env.step(0, obs).terminated);
  env.set_state({0.0, 0.0, -th + 0.001, -0.1});
  EXPECT_TRUE(env.step(1, obs).terminated);
  env.set_state({0.0, 0.0, th - 0.003, 0.1});  // theta -> th - 0.001
  EXPECT_FALSE(env.step(0, obs).terminated);
}

TEST(CartPole, TruncatesAtFiveHundredSteps) {
  CartPole env;
  float obs[4];
  env.set_state({0.0, 0.0, 0.0, 0.0}, 498);
  ppo::StepResult r = env.step(0, obs);
  EXPECT_FALSE(r.truncated);
  env.set_state({0.0, 0.0, 0.0, 0.0}, 499);
  r = env.step(0, obs);
  EXPECT_TRUE(r.truncated);
  EXPECT_FALSE(r.terminated);
  EXPECT_EQ(r.reward, 1.0f);
  // Termination wins over truncation on the same step.
  env.set_state({2.39, 1.0, 0.0, 0.0}, 499);
  r = env.step(1, obs);
  EXPECT_TRUE(r.terminated);
  EXPECT_FALSE(r.truncated);
}

TEST(CartPole, ResetStateIsUniformInSmallRange) {
  CartPole env;
  std::mt19937_64 rng(7);
  float obs[4];
  double lo = 1.0, hi = -1.0;
  for (int k = 0; k < 2000; ++k) {
    env.reset(rng, obs);
    EXPECT_EQ(env.steps(), 0);
    for (int i = 0; i < 4; ++i) {
      ASSERT_GE(obs[i], -0.05f);
      ASSERT_LE(obs[i], 0.05f);
      EXPECT_EQ(obs[i], static_cast<float>(env.state()[i]));
      lo = std::min(lo, env.state()[i]);
      hi = std::max(hi, env.state()[i]);
    }
  }
  EXPECT_LT(lo, -0.049);
  EXPECT_GT(hi, 0.049);
}

TEST(CartPole, RejectsBadAction) {
  CartPole env;
  float obs[4];
  EXPECT_THROW(env.step(2, obs), std::out_of_range);
  EXPECT_THROW(env.step(-1, obs), std::out_of_range);
}

ppo::EnvFactory cartpole_factory() {
  return [] { return std::unique_ptr<ppo::Env>(new CartPole()); };
}

TEST(VectorEnv, ResetSeedsEachEnvWithSeedPlusIndex) {
  ppo::VectorEnv v(cartpole_factory(), 3, 100);
  EXPECT_EQ(v.num_envs(), 3);
  EXPECT_EQ(v.observation_size(), 4);
  EXPECT_EQ(v.num_actions(), 2);
  EXPECT_EQ(v.observation_shape(), std::vector<int64_t>{4});
  v.reset();
  ASSERT_EQ(v.observations().size(), 12u);
  for (int i = 0; i < 3; ++i) {
    CartPole c;
    std::mt19937_64 rng(100 + i);
    float obs[4];
    c.reset(rng, obs);
    for (int j = 0; j < 4; ++j) EXPECT_EQ(v.observations()[i * 4 + j], obs[j]);
  }
  EXPECT_EQ(v.action_masks(), std::vector<uint8_t>(6, 1));
}

TEST(VectorEnv, AutoresetsOnTerminationAndRecordsEpisodes) {
  ppo::VectorEnv v(cartpole_factory(), 2, 1);
  v.reset();
  // Env 0 will fall this step; env 1 is in the middle of a calm episode.
  auto& c0 = static_cast<CartPole&>(v.env(0));
  auto& c1 = static_cast<CartPole&>(v.env(1));
  c0.set_state({2.39, 1.0, 0.0, 0.0}, 9);
  c1.set_state({0.0, 0.0, 0.0, 0.0}, 3);
  const int actions[2] = {1, 1};
  v.finished_episodes().clear();
  v.step(actions);
  EXPECT_EQ(v.terminated()[0], 1);
  EXPECT_EQ(v.truncated()[0], 0);
  EXPECT_EQ(v.terminated()[1], 0);
  EXPECT_EQ(v.rewards()[0], 1.0f);
  EXPECT_EQ(v.rewards()[1], 1.0f);
  // Env 0 was reset: a fresh state near 0, step count 0.
  EXPECT_EQ(c0.steps(), 0);
  for (int j = 0; j < 4; ++j) EXPECT_LE(std::fabs(v.observations()[j]), 0.05f);
  EXPECT_EQ(c1.steps(), 4);
  // The episode started at reset() and ran one VectorEnv step (set_state does not count).
  ASSERT_EQ(v.finished_episodes().size(), 1u);
  EXPECT_EQ(v.finished_episodes()[0].env_index, 0);
  EXPECT_EQ(v.finished_episodes()[0].length, 1);
  EXPECT_DOUBLE_EQ(v.finished_episodes()[0].episode_return, 1.0);
  EXPECT_FALSE(v.finished_episodes()[0].truncated);
  EXPECT_FALSE(v.finished_episodes()[0].solved);
}

TEST(VectorEnv, KeepsFinalObservationOfTruncatedEnv) {
  ppo::VectorEnv v(cartpole_factory(), 2, 5);
  v.reset();
  auto& c1 = static_cast<CartPole&>(v.env(1));
  c1.set_state({0.1, 0.0, 0.0, 0.0}, 499);
  const int actions[2] = {0, 1};
  v.step(actions);
  EXPECT_EQ(v.truncated()[1], 1);
  EXPECT_EQ(v.terminated()[1], 0);
  const auto expect = hand_step({0.1, 0.0, 0.0, 0.0}, 1);
  const float* fin = v.final_observation(1);
  for (int j = 0; j < 4; ++j) EXPECT_EQ(fin[j], static_cast<float>(expect[j]));
  // The current observation is the new episode's first.
  EXPECT_NE(v.observations()[4 + 1], fin[1]);
  ASSERT_EQ(v.finished_episodes().size(), 1u);
  EXPECT_TRUE(v.finished_episodes()[0].truncated);
  EXPECT_EQ(v.finished_episodes()[0].env_index, 1);
}

TEST(VectorEnv, RandomRolloutEpisodeStatsAndDeterminism) {
  auto run = [](uint64_t seed) {
    ppo::VectorEnv v(cartpole_factory(), 4, seed);
    v.reset();
    std::mt19937 arng(3);
    std::vector<int> actions(4);
    std::vector<float> trace;
    int64_t steps = 0, ended = 0;
    for (int t = 0; t < 2000; ++t) {
      for (int& a : actions) a = static_cast<int>(arng() & 1);
      v.step(actions.data());
      steps += 4;
      for (int i = 0; i < 4; ++i) ended += v.terminated()[i] + v.truncated()[i];
      trace.insert(trace.end(), v.observations().begin(), v.observations().end());
    }
    int64_t total_len = 0;
    for (const auto& e : v.finished_episodes()) {
      EXPECT_DOUBLE_EQ(e.episode_return, static_cast<double>(e.length));
      EXPECT_GE(e.length, 1);
      EXPECT_LE(e.length, 500);
      total_len += e.length;
    }
    EXPECT_EQ(static_cast<int64_t>(v.finished_episodes().size()), ended);
    EXPECT_GT(ended, 100);  // random play lasts ~20 steps
    EXPECT_LE(total_len, steps);
    return trace;
  };
  EXPECT_EQ(run(11), run(11));
  EXPECT_NE(run(11), run(12));
}

// A uniformly random policy keeps the pole up for about 22 steps on average (the figure
// the PPO references quote for CartPole-v1's random baseline); never near the 500 limit.
TEST(VectorEnv, RandomPolicyEpisodesLastAbout22Steps) {
  ppo::VectorEnv v(cartpole_factory(), 4, 0);
  v.reset();
  std::mt19937 arng(1);
  int actions[4];
  double total_length = 0;
  int64_t episodes = 0, longest = 0;
  for (int t = 0; t < 50000; ++t) {
    for (int& a : actions) a = static_cast<int>(arng() & 1);
    v.step(actions);
    for (const ppo::EpisodeRecord& e : v.finished_episodes()) {
      total_length += static_cast<double>(e.length);
      longest = std::max(longest, e.length);
      ++episodes;
      EXPECT_DOUBLE_EQ(e.episode_return, static_cast<double>(e.length));  // reward 1 per step
    }
    v.finished_episodes().clear();
  }
  ASSERT_GT(episodes, 5000);
  const double mean = total_length / static_cast<double>(episodes);
  EXPECT_GT(mean, 19.0);
  EXPECT_LT(mean, 26.0);
  EXPECT_LT(longest, 200);
}

// A checkpointed VectorEnv resumes exactly: same observations, rewards and episode ends.
TEST(VectorEnv, StateRoundTripResumesExactly) {
  ppo::VectorEnv a(cartpole_factory(), 4, 7);
  a.reset();
  std::mt19937 arng(3);
  int actions[4];
  auto random_actions = [&] {
    for (int& x : actions) x = static_cast<int>(arng() & 1);
  };
  for (int t = 0; t < 137; ++t) {
    random_actions();
    a.step(actions);
  }
  const nlohmann::json saved = a.state();
  ppo::VectorEnv b(cartpole_factory(), 4, 999);  // another seed: everything comes from the state
  b.reset();
  b.load_state(nlohmann::json::parse(saved.dump()));
  EXPECT_EQ(a.observations(), b.observations());
  a.finished_episodes().clear();
  for (int t = 0; t < 300; ++t) {
    random_actions();
    a.step(actions);
    b.step(actions);
    ASSERT_EQ(a.observations(), b.observations()) << "step " << t;
    ASSERT_EQ(a.rewards(), b.rewards());
    ASSERT_EQ(a.terminated(), b.terminated());
  }
  ASSERT_EQ(a.finished_episodes().size(), b.finished_episodes().size());
  for (size_t i = 0; i < a.finished_episodes().size(); ++i)
    EXPECT_EQ(a.finished_episodes()[i].length, b.finished_episodes()[i].length);

  ppo::VectorEnv wrong(cartpole_factory(), 3, 0);
  EXPECT_THROW(wrong.load_state(saved), std::invalid_argument);
}

}  // namespace
