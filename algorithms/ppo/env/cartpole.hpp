// CartPole-v1 exactly as gymnasium's (classic_control/cartpole.py): Euler integration in
// double precision, observation cast to float {x, x_dot, theta, theta_dot}, reward 1 on every
// step including the one that ends the episode, termination when |x| > 2.4 or
// |theta| > 12 degrees, truncation after 500 steps (gymnasium's TimeLimit).
#pragma once

#include <array>

#include "env.hpp"

namespace ppo {

class CartPole final : public Env {
 public:
  static constexpr double kGravity = 9.8;
  static constexpr double kMassCart = 1.0;
  static constexpr double kMassPole = 0.1;
  static constexpr double kTotalMass = kMassCart + kMassPole;
  static constexpr double kLength = 0.5;  // half the pole's length
  static constexpr double kPoleMassLength = kMassPole * kLength;
  static constexpr double kForceMag = 10.0;
  static constexpr double kTau = 0.02;
  static constexpr double kThetaThreshold = 12.0 * 2.0 * 3.14159265358979323846 / 360.0;
  static constexpr double kXThreshold = 2.4;
  static constexpr int kMaxSteps = 500;

  std::string name() const override { return "cartpole"; }
  std::vector<int64_t> observation_shape() const override { return {4}; }
  int num_actions() const override { return 2; }  // 0: push left, 1: push right
  // State uniform in [-0.05, 0.05]^4.
  void reset(std::mt19937_64& rng, float* observation) override;
  StepResult step(int action, float* observation) override;

  // Test hooks: the double-precision state {x, x_dot, theta, theta_dot} and the step count.
  void set_state(const std::array<double, 4>& state, int steps = 0);
  // {x, x_dot, theta, theta_dot, steps}
  std::vector<double> snapshot() const override;
  void restore(const std::vector<double>& snapshot) override;
  const std::array<double, 4>& state() const { return state_; }
  int steps() const { return steps_; }

 private:
  void write(float* observation) const;
  std::array<double, 4> state_{};
  int steps_ = 0;
};

}  // namespace ppo
