// Pendulum-v1 and MountainCarContinuous-v0 against trajectories gymnasium itself played
// (tests/fixtures/gymnasium_continuous_control.json, written by gymnasium_classic_control.py),
// their resets, exact resume from snapshots, action bounds and clipping, and episode ends.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <mlh/plugin.hpp>
#include <nlohmann/json.hpp>

#include "env/mountain_car_continuous.hpp"
#include "env/pendulum.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace {

using ppo::MountainCarContinuous;
using ppo::Pendulum;

constexpr double kPi = 3.14159265358979323846;

const nlohmann::json& fixture() {
  static const nlohmann::json loaded = [] {
    std::ifstream in(PPO_TEST_GYMNASIUM_FIXTURE);
    if (!in) throw std::runtime_error(std::string("cannot open ") + PPO_TEST_GYMNASIUM_FIXTURE);
    return nlohmann::json::parse(in);
  }();
  return loaded;
}

// Within `tolerance` absolutely for values up to 1, relatively above.
bool close(double actual, double expected, double tolerance) {
  return std::fabs(actual - expected) <= tolerance * std::max(1.0, std::fabs(expected));
}

struct Coverage {
  int steps = 0, terminations = 0, truncations = 0;
  double best_reward = -1e9;
};

// Plays each recorded episode from its state and checks every step against gymnasium's.
template <class E>
Coverage replay(const nlohmann::json& episodes) {
  Coverage seen;
  for (size_t e = 0; e < episodes.size(); ++e) {
    const nlohmann::json& episode = episodes[e];
    E env;
    env.set_state(episode["state"][0].get<double>(), episode["state"][1].get<double>(), episode["steps"].get<int>());
    std::vector<float> observation(static_cast<size_t>(env.observation_size()));
    for (size_t t = 0; t < episode["actions"].size(); ++t) {
      SCOPED_TRACE(env.name() + " episode " + std::to_string(e) + " step " + std::to_string(t));
      const float action = episode["actions"][t].get<float>();
      const ppo::StepResult r = env.step_continuous(&action, observation.data());
      const nlohmann::json& expected = episode["observations"][t];
      for (size_t i = 0; i < observation.size(); ++i)
        EXPECT_PRED3(close, observation[i], expected[i].get<double>(), 1e-6) << "observation[" << i << "]";
      const double reward = episode["rewards"][t].get<double>();
      EXPECT_PRED3(close, r.reward, reward, 1e-5);
      EXPECT_EQ(r.terminated, episode["terminated"][t].get<bool>());
      EXPECT_EQ(r.truncated, episode["truncated"][t].get<bool>());
      ++seen.steps;
      seen.terminations += r.terminated;
      seen.truncations += r.truncated;
      seen.best_reward = std::max(seen.best_reward, reward);
    }
  }
  return seen;
}

TEST(Pendulum, MatchesGymnasiumTrajectories) {
  const Coverage seen = replay<Pendulum>(fixture().at("pendulum"));
  EXPECT_GE(seen.steps, 200);
  EXPECT_EQ(seen.truncations, 1);  // the 200-step episode, on its last step
  EXPECT_EQ(seen.terminations, 0);
}

TEST(MountainCarContinuous, MatchesGymnasiumTrajectories) {
  const Coverage seen = replay<MountainCarContinuous>(fixture().at("mountain_car_continuous"));
  EXPECT_GE(seen.steps, 50);
  EXPECT_GE(seen.terminations, 2);  // the goal, reached twice
  EXPECT_EQ(seen.truncations, 1);   // the episode started at step 996
  EXPECT_GT(seen.best_reward, 99.0);
}

TEST(Pendulum, FirstStepFromRestByHand) {
  // Hanging upright at rest (theta 0), torque 1: theta_dot = 3 / (m l^2) * 1 * dt = 0.15,
  // theta = 0.15 * dt; the reward is the torque's cost alone, from the state before the step.
  Pendulum env;
  env.set_state(0.0, 0.0);
  float obs[3];
  const float torque = 1.0f;
  const ppo::StepResult r = env.step_continuous(&torque, obs);
  EXPECT_DOUBLE_EQ(env.state()[1], 0.15);
  EXPECT_DOUBLE_EQ(env.state()[0], 0.0075);
  EXPECT_FLOAT_EQ(obs[0], static_cast<float>(std::cos(0.0075)));
  EXPECT_FLOAT_EQ(obs[1], static_cast<float>(std::sin(0.0075)));
  EXPECT_FLOAT_EQ(obs[2], 0.15f);
  EXPECT_FLOAT_EQ(r.reward, -0.001f);
  EXPECT_FALSE(r.terminated);
  EXPECT_FALSE(r.truncated);
  EXPECT_EQ(env.steps(), 1);
}

// The values gymnasium 1.4 gives under NumPy 2, where a float32 action times a Python float
// stays float32 (NEP 50): 3 * u rounds to float before it joins the double state. Plain
// double arithmetic gives theta_dot 0.01500000022351742 here; over an episode such
// differences grow past the fixture's tolerance.
TEST(Pendulum, TorqueTermRoundsToFloatAsGymnasiumDoes) {
  Pendulum env;
  env.set_state(0.0, 0.0);
  float obs[3];
  const float torque = 0.1f;
  env.step_continuous(&torque, obs);
  EXPECT_EQ(env.state()[1], 0.015000000596046448);
}

TEST(Pendulum, ClipsTorqueAndSpeedAndNormalizesTheAngleInTheReward) {
  Pendulum clipped, bound;
  float a[3], b[3];
  clipped.set_state(1.0, 0.5);
  bound.set_state(1.0, 0.5);
  const float too_much = 3.5f, most = 2.0f;
  const ppo::StepResult rc = clipped.step_continuous(&too_much, a);
  const ppo::StepResult rb = bound.step_continuous(&most, b);
  EXPECT_EQ(clipped.state(), bound.state());
  EXPECT_EQ(rc.reward, rb.reward);  // the cost of the clipped torque, 2
  // Angular speed stops at 8.
  clipped.set_state(0.5, 7.9);
  clipped.step_continuous(&most, a);
  EXPECT_EQ(clipped.state()[1], 8.0);
  EXPECT_EQ(a[2], 8.0f);
  // theta + 2 pi k costs what theta does: the reward normalizes the angle into [-pi, pi).
  const float none = 0.0f;
  for (const double k : {-3.0, -1.0, 0.0, 2.0}) {
    Pendulum turned;
    turned.set_state(-0.3 + 2.0 * kPi * k, 0.0);
    EXPECT_NEAR(turned.step_continuous(&none, a).reward, -(0.3 * 0.3), 1e-6) << k;
  }
}

TEST(Pendulum, NeverTerminatesAndTruncatesAtTwoHundredSteps) {
  Pendulum env;
  float obs[3];
  const float torque = -0.5f;
  env.set_state(kPi, 0.0, 198);
  ppo::StepResult r = env.step_continuous(&torque, obs);
  EXPECT_FALSE(r.truncated);
  r = env.step_continuous(&torque, obs);
  EXPECT_TRUE(r.truncated);
  EXPECT_FALSE(r.terminated);
  EXPECT_EQ(env.steps(), 200);
}

TEST(Pendulum, ResetDrawsThetaThenThetaDotWithinGymnasiumRanges) {
  Pendulum env;
  std::mt19937_64 rng(7);
  float obs[3];
  double theta_lo = 0, theta_hi = 0, speed_lo = 0, speed_hi = 0;
  for (int k = 0; k < 2000; ++k) {
    env.set_state(0.0, 0.0, 17);
    env.reset(rng, obs);
    EXPECT_EQ(env.steps(), 0);
    const auto [theta, theta_dot] = env.state();
    ASSERT_GE(theta, -kPi);
    ASSERT_LE(theta, kPi);
    ASSERT_GE(theta_dot, -1.0);
    ASSERT_LE(theta_dot, 1.0);
    EXPECT_EQ(obs[0], static_cast<float>(std::cos(theta)));
    EXPECT_EQ(obs[1], static_cast<float>(std::sin(theta)));
    EXPECT_EQ(obs[2], static_cast<float>(theta_dot));
    theta_lo = std::min(theta_lo, theta);
    theta_hi = std::max(theta_hi, theta);
    speed_lo = std::min(speed_lo, theta_dot);
    speed_hi = std::max(speed_hi, theta_dot);
  }
  EXPECT_LT(theta_lo, -3.1);
  EXPECT_GT(theta_hi, 3.1);
  EXPECT_LT(speed_lo, -0.99);
  EXPECT_GT(speed_hi, 0.99);
  // The documented draws: theta from the first 64-bit number, theta_dot from the second,
  // each as its top 53 bits over 2^53.
  std::mt19937_64 same(123), draws(123);
  env.reset(same, obs);
  const double first = static_cast<double>(draws() >> 11) * 0x1.0p-53;
  const double second = static_cast<double>(draws() >> 11) * 0x1.0p-53;
  EXPECT_DOUBLE_EQ(env.state()[0], -kPi + 2.0 * kPi * first);
  EXPECT_DOUBLE_EQ(env.state()[1], -1.0 + 2.0 * second);
}

TEST(MountainCarContinuous, ResetDrawsPositionWithinGymnasiumRangeAtRest) {
  MountainCarContinuous env;
  std::mt19937_64 rng(7);
  float obs[2];
  double lo = 0, hi = -1;
  for (int k = 0; k < 2000; ++k) {
    env.set_state(0.3, 0.02, 17);
    env.reset(rng, obs);
    EXPECT_EQ(env.steps(), 0);
    const auto [position, velocity] = env.state();
    ASSERT_GE(position, -0.6);
    ASSERT_LE(position, -0.4);
    EXPECT_EQ(velocity, 0.0);
    EXPECT_EQ(obs[0], static_cast<float>(position));
    EXPECT_EQ(obs[1], 0.0f);
    lo = std::min(lo, position);
    hi = std::max(hi, position);
  }
  EXPECT_LT(lo, -0.599);
  EXPECT_GT(hi, -0.401);
  std::mt19937_64 same(123), draws(123);
  env.reset(same, obs);
  EXPECT_DOUBLE_EQ(env.state()[0], -0.6 + 0.2 * (static_cast<double>(draws() >> 11) * 0x1.0p-53));
}

template <class E>
std::vector<float> start(E& env, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> obs(static_cast<size_t>(env.observation_size()));
  env.reset(rng, obs.data());
  return obs;
}

template <class E>
void same_seed_same_start() {
  E a, b, c;
  EXPECT_EQ(start(a, 5), start(b, 5));
  EXPECT_EQ(a.state(), b.state());
  EXPECT_NE(start(c, 6), start(a, 5));
}

TEST(Pendulum, SameSeedSameStart) { same_seed_same_start<Pendulum>(); }
TEST(MountainCarContinuous, SameSeedSameStart) { same_seed_same_start<MountainCarContinuous>(); }

// Plays `steps` actions of a policy of the step count alone from the env's state; the trace
// of observations, rewards and ends that a resumed env must reproduce exactly.
template <class E>
std::vector<float> play(E& env, int steps, float scale) {
  std::vector<float> trace, obs(static_cast<size_t>(env.observation_size()));
  for (int t = 0; t < steps; ++t) {
    const float action = scale * static_cast<float>(std::sin(0.3 * env.steps()));
    const ppo::StepResult r = env.step_continuous(&action, obs.data());
    trace.insert(trace.end(), obs.begin(), obs.end());
    trace.push_back(r.reward);
    trace.push_back(static_cast<float>(r.terminated + 2 * r.truncated));
  }
  return trace;
}

template <class E>
void snapshot_resumes_exactly(int warmup, float scale) {
  E env;
  start(env, 42);
  play(env, warmup, scale);
  const std::vector<double> saved = env.snapshot();
  ASSERT_EQ(saved.size(), 3u);
  EXPECT_EQ(saved[2], static_cast<double>(warmup));
  const std::vector<float> expected = play(env, 150, scale);
  E resumed;
  start(resumed, 999);  // another start: everything comes from the snapshot
  resumed.restore(saved);
  EXPECT_EQ(resumed.steps(), warmup);
  EXPECT_EQ(play(resumed, 150, scale), expected);
  EXPECT_THROW(resumed.restore({0.0, 0.0}), std::invalid_argument);
}

TEST(Pendulum, SnapshotRestoreContinuesIdentically) {
  snapshot_resumes_exactly<Pendulum>(37, 3.0f);  // out-of-bound torques too
}

TEST(MountainCarContinuous, SnapshotRestoreContinuesIdentically) {
  snapshot_resumes_exactly<MountainCarContinuous>(37, 1.4f);
  // At an episode's start the state is still reset's double one, and resumes as such.
  snapshot_resumes_exactly<MountainCarContinuous>(0, 1.0f);
}

// Steps of gymnasium 1.4 under NumPy 2, which computes in the state's type: float64 from
// reset to the first step, float32 after it (but for the cosine), with the float32 action.
// Plain double arithmetic rounded at the end gives velocity 0.0004702989826910198 in the
// first case and {0.004398767836391926, -0.03060123138129711} in the second; float32
// throughout gives velocity 0.00047029921552166343 in the first. A force beyond the bounds
// becomes the Python float bound, and force * power - 0.0025 cos(3 position) a double:
// {-0.0948675274848938, 0.01413247361779213} in the third case if computed in float32.
TEST(MountainCarContinuous, StepComputesInGymnasiumsTypes) {
  MountainCarContinuous env;
  float obs[2];
  env.set_state(-0.437346, 0.0, 0);  // as reset leaves it
  const float push = 0.74f;
  env.step_continuous(&push, obs);
  EXPECT_EQ(obs[0], -0.43687570095062256f);
  EXPECT_EQ(obs[1], 0.0004702990408986807f);
  env.set_state(0.035, -0.0269, 5);  // read as float32, as gymnasium holds it after a step
  const float pull = -0.81f;
  env.step_continuous(&pull, obs);
  EXPECT_EQ(obs[0], 0.004398766905069351f);
  EXPECT_EQ(obs[1], -0.03060123324394226f);
  env.set_state(-0.109, 0.015, 5);
  const float beyond = 1.5f;
  env.step_continuous(&beyond, obs);
  EXPECT_EQ(obs[0], -0.0948675200343132f);
  EXPECT_EQ(obs[1], 0.014132474549114704f);
}

TEST(MountainCarContinuous, ClipsForceButChargesTheRawAction) {
  MountainCarContinuous clipped, bound;
  float a[2], b[2];
  clipped.set_state(-0.5, 0.01, 3);
  bound.set_state(-0.5, 0.01, 3);
  const float too_much = 1.5f, most = 1.0f;
  const ppo::StepResult rc = clipped.step_continuous(&too_much, a);
  const ppo::StepResult rb = bound.step_continuous(&most, b);
  EXPECT_EQ(clipped.state(), bound.state());
  EXPECT_FLOAT_EQ(rc.reward, -0.225f);  // -0.1 * 1.5^2: gymnasium's cost takes the raw action
  EXPECT_FLOAT_EQ(rb.reward, -0.1f);
}

TEST(MountainCarContinuous, LeftWallStopsTheCar) {
  MountainCarContinuous env;
  float obs[2];
  const float left = -1.0f;
  env.set_state(-1.19, -0.05, 4);
  const ppo::StepResult r = env.step_continuous(&left, obs);
  EXPECT_EQ(obs[0], static_cast<float>(MountainCarContinuous::kMinPosition));
  EXPECT_EQ(obs[1], 0.0f);
  EXPECT_FALSE(r.terminated);
}

TEST(MountainCarContinuous, GoalTerminatesWithRewardAndTruncatesAt999Steps) {
  MountainCarContinuous env;
  float obs[2];
  const float push = 0.5f;
  env.set_state(0.44, 0.03, 10);
  ppo::StepResult r = env.step_continuous(&push, obs);
  EXPECT_TRUE(r.terminated);
  EXPECT_TRUE(r.solved);
  EXPECT_FALSE(r.truncated);
  EXPECT_FLOAT_EQ(r.reward, 100.0f - 0.025f);
  // Moving away from the goal past it does not count: velocity must be >= 0.
  env.set_state(0.5, -0.001, 10);
  EXPECT_FALSE(env.step_continuous(&push, obs).terminated);

  env.set_state(-0.5, 0.0, 997);
  r = env.step_continuous(&push, obs);
  EXPECT_FALSE(r.truncated);
  r = env.step_continuous(&push, obs);
  EXPECT_TRUE(r.truncated);
  EXPECT_FALSE(r.terminated);
  EXPECT_EQ(env.steps(), 999);
  // The goal on the last step: the SDK reports one end, the termination.
  env.set_state(0.44, 0.03, 998);
  r = env.step_continuous(&push, obs);
  EXPECT_TRUE(r.terminated);
  EXPECT_FALSE(r.truncated);
}

TEST(ContinuousControl, ShapesBoundsAndActionKind) {
  Pendulum pendulum;
  MountainCarContinuous car;
  EXPECT_EQ(pendulum.name(), "pendulum");
  EXPECT_EQ(car.name(), "mountain-car-continuous");
  EXPECT_EQ(pendulum.observation_shape(), std::vector<int64_t>{3});
  EXPECT_EQ(car.observation_shape(), std::vector<int64_t>{2});
  EXPECT_EQ(pendulum.action_bounds().low, std::vector<float>{-2.0f});
  EXPECT_EQ(pendulum.action_bounds().high, std::vector<float>{2.0f});
  EXPECT_EQ(car.action_bounds().low, std::vector<float>{-1.0f});
  EXPECT_EQ(car.action_bounds().high, std::vector<float>{1.0f});
  float obs[3];
  for (ppo::Env* env : {static_cast<ppo::Env*>(&pendulum), static_cast<ppo::Env*>(&car)}) {
    EXPECT_EQ(env->num_actions(), 0) << env->name();
    EXPECT_TRUE(env->continuous_actions()) << env->name();
    EXPECT_THROW(env->step(0, obs), mlh::Error) << env->name();
  }
}

}  // namespace
