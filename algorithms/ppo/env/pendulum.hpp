// Pendulum-v1 exactly as gymnasium's (classic_control/pendulum.py): swing a pendulum up and
// keep it upright with a torque in [-2, 2]. State {theta, theta_dot} in double precision
// (theta 0 is upright), observation cast to float {cos theta, sin theta, theta_dot}, reward
// -(angle_normalize(theta)^2 + 0.1 theta_dot^2 + 0.001 u^2) from the state before the step,
// never terminates, truncation after 200 steps (gymnasium's TimeLimit).
#pragma once

#include <array>

#include "env.hpp"

namespace ppo {

class Pendulum final : public mlh::ContinuousEnvironment {
 public:
  static constexpr double kMaxSpeed = 8.0;
  static constexpr float kMaxTorque = 2.0f;
  static constexpr double kDt = 0.05;
  static constexpr double kGravity = 10.0;
  static constexpr double kMass = 1.0;
  static constexpr double kLength = 1.0;
  static constexpr int kMaxSteps = 200;

  std::string name() const override { return "pendulum"; }
  std::vector<int64_t> observation_shape() const override { return {3}; }
  mlh::ActionBounds action_bounds() const override { return {{-kMaxTorque}, {kMaxTorque}}; }
  // theta uniform in [-pi, pi], then theta_dot uniform in [-1, 1], each from one 64-bit draw.
  void reset(std::mt19937_64& rng, float* observation) override;
  // action[0] is the torque; gymnasium clips it to [-2, 2] here, and so does this.
  StepResult step_continuous(const float* action, float* observation) override;

  // Test hooks: the double-precision state {theta, theta_dot} and the step count.
  void set_state(double theta, double theta_dot, int steps = 0);
  // {theta, theta_dot, steps}
  std::vector<double> snapshot() const override;
  void restore(const std::vector<double>& snapshot) override;
  std::array<double, 2> state() const { return {theta_, theta_dot_}; }
  int steps() const { return steps_; }

 private:
  void write(float* observation) const;
  double theta_ = 0.0, theta_dot_ = 0.0;
  int steps_ = 0;
};

}  // namespace ppo
