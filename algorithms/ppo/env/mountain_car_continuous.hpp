// MountainCarContinuous-v0 exactly as gymnasium's (classic_control/continuous_mountain_car.py):
// drive an underpowered car up the right hill (position >= 0.45 with velocity >= 0) with a
// force in [-1, 1]. Reward 100 on reaching the goal minus 0.1 action^2 on every step (the
// action as given, not clipped: gymnasium's cost), observation {position, velocity} as float,
// truncation after 999 steps (gymnasium's TimeLimit).
//
// The arithmetic follows gymnasium's types under NumPy 2: its state is float64 from reset to
// the first step and float32 after it (step stores np.float32), and a step computes in that
// type; so does this one, and steps() == 0 tells which (step_continuous in the .cpp).
#pragma once

#include <array>

#include "env.hpp"

namespace ppo {

class MountainCarContinuous final : public mlh::ContinuousEnvironment {
 public:
  static constexpr float kMinAction = -1.0f;
  static constexpr float kMaxAction = 1.0f;
  static constexpr double kMinPosition = -1.2;
  static constexpr double kMaxPosition = 0.6;
  static constexpr double kMaxSpeed = 0.07;
  static constexpr double kGoalPosition = 0.45;
  static constexpr double kGoalVelocity = 0.0;
  static constexpr double kPower = 0.0015;
  static constexpr int kMaxSteps = 999;

  std::string name() const override { return "mountain-car-continuous"; }
  std::vector<int64_t> observation_shape() const override { return {2}; }
  mlh::ActionBounds action_bounds() const override { return {{kMinAction}, {kMaxAction}}; }
  // Position uniform in [-0.6, -0.4] from one 64-bit draw, velocity 0.
  void reset(std::mt19937_64& rng, float* observation) override;
  // action[0] is the force; gymnasium clips it to [-1, 1] here, and so does this.
  StepResult step_continuous(const float* action, float* observation) override;

  // Test hooks: the state {position, velocity} and the step count. As in gymnasium, the state
  // is float64 only at the episode's start: with steps > 0 the next step reads it as float32.
  void set_state(double position, double velocity, int steps = 0);
  // {position, velocity, steps}
  std::vector<double> snapshot() const override;
  void restore(const std::vector<double>& snapshot) override;
  std::array<double, 2> state() const { return {position_, velocity_}; }
  int steps() const { return steps_; }

 private:
  void write(float* observation) const;
  double position_ = 0.0, velocity_ = 0.0;
  int steps_ = 0;
};

}  // namespace ppo
