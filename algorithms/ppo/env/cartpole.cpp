#include "cartpole.hpp"

#include <cmath>
#include <stdexcept>

namespace ppo {

void CartPole::reset(std::mt19937_64& rng, float* observation) {
  std::uniform_real_distribution<double> u(-0.05, 0.05);
  for (double& v : state_) v = u(rng);
  steps_ = 0;
  write(observation);
}

StepResult CartPole::step(int action, float* observation) {
  if (action != 0 && action != 1) throw std::out_of_range("CartPole: action must be 0 or 1");
  const double x = state_[0], x_dot = state_[1], theta = state_[2], theta_dot = state_[3];
  const double force = action == 1 ? kForceMag : -kForceMag;
  const double costheta = std::cos(theta), sintheta = std::sin(theta);
  const double temp = (force + kPoleMassLength * theta_dot * theta_dot * sintheta) / kTotalMass;
  const double thetaacc = (kGravity * sintheta - costheta * temp) /
                          (kLength * (4.0 / 3.0 - kMassPole * costheta * costheta / kTotalMass));
  const double xacc = temp - kPoleMassLength * thetaacc * costheta / kTotalMass;
  state_[0] = x + kTau * x_dot;
  state_[1] = x_dot + kTau * xacc;
  state_[2] = theta + kTau * theta_dot;
  state_[3] = theta_dot + kTau * thetaacc;
  ++steps_;
  write(observation);
  StepResult r;
  r.reward = 1.0f;
  r.terminated = state_[0] < -kXThreshold || state_[0] > kXThreshold ||
                 state_[2] < -kThetaThreshold || state_[2] > kThetaThreshold;
  r.truncated = !r.terminated && steps_ >= kMaxSteps;
  return r;
}

void CartPole::set_state(const std::array<double, 4>& state, int steps) {
  state_ = state;
  steps_ = steps;
}

void CartPole::write(float* observation) const {
  for (int i = 0; i < 4; ++i) observation[i] = static_cast<float>(state_[i]);
}

std::vector<double> CartPole::snapshot() const {
  return {state_[0], state_[1], state_[2], state_[3], static_cast<double>(steps_)};
}

void CartPole::restore(const std::vector<double>& snapshot) {
  if (snapshot.size() != 5) throw std::invalid_argument("CartPole::restore: expected 5 values");
  set_state({snapshot[0], snapshot[1], snapshot[2], snapshot[3]}, static_cast<int>(snapshot[4]));
}

}  // namespace ppo
