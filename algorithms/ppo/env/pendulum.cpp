#include "pendulum.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace ppo {
namespace {

constexpr double kPi = 3.14159265358979323846;

// Uniform in [low, high) from one 64-bit draw (its top 53 bits): the same numbers on every
// standard library, which std::uniform_real_distribution does not promise.
double uniform(std::mt19937_64& rng, double low, double high) {
  const double unit = static_cast<double>(rng() >> 11) * 0x1.0p-53;
  return low + (high - low) * unit;
}

// gymnasium's angle_normalize, ((x + pi) % (2 pi)) - pi, with NumPy's floor remainder (the
// sign of the divisor), which std::fmod (the sign of the dividend) becomes by adding 2 pi.
double angle_normalize(double x) {
  double remainder = std::fmod(x + kPi, 2.0 * kPi);
  if (remainder < 0.0) remainder += 2.0 * kPi;
  return remainder - kPi;
}

}  // namespace

void Pendulum::reset(std::mt19937_64& rng, float* observation) {
  theta_ = uniform(rng, -kPi, kPi);
  theta_dot_ = uniform(rng, -1.0, 1.0);
  steps_ = 0;
  write(observation);
}

StepResult Pendulum::step_continuous(const float* action, float* observation) {
  const double th = theta_, thdot = theta_dot_;
  const float u = std::clamp(action[0], -kMaxTorque, kMaxTorque);
  // gymnasium's u is a float32 (the action space's type), and NumPy 2 keeps float32 times a
  // Python float in float32 (NEP 50): 0.001 * u**2 and 3 / (m l^2) * u round to float, and
  // only their sums with the float64 terms are double. Rounding them as gymnasium does keeps
  // a trajectory on gymnasium's bit for bit, where differences of 1e-8 would grow over an
  // episode's swings.
  const float torque_cost = 0.001f * (u * u);
  const float torque_acceleration = static_cast<float>(3.0 / (kMass * kLength * kLength)) * u;
  const double normalized = angle_normalize(th);
  const double cost = normalized * normalized + 0.1 * (thdot * thdot) + static_cast<double>(torque_cost);
  double new_thdot = thdot + (3.0 * kGravity / (2.0 * kLength) * std::sin(th) +
                              static_cast<double>(torque_acceleration)) * kDt;
  new_thdot = std::clamp(new_thdot, -kMaxSpeed, kMaxSpeed);
  theta_ = th + new_thdot * kDt;
  theta_dot_ = new_thdot;
  ++steps_;
  write(observation);
  StepResult r;
  r.reward = static_cast<float>(-cost);
  r.truncated = steps_ >= kMaxSteps;
  return r;
}

void Pendulum::set_state(double theta, double theta_dot, int steps) {
  theta_ = theta;
  theta_dot_ = theta_dot;
  steps_ = steps;
}

void Pendulum::write(float* observation) const {
  observation[0] = static_cast<float>(std::cos(theta_));
  observation[1] = static_cast<float>(std::sin(theta_));
  observation[2] = static_cast<float>(theta_dot_);
}

std::vector<double> Pendulum::snapshot() const { return {theta_, theta_dot_, static_cast<double>(steps_)}; }

void Pendulum::restore(const std::vector<double>& snapshot) {
  if (snapshot.size() != 3) throw std::invalid_argument("Pendulum::restore: expected 3 values");
  set_state(snapshot[0], snapshot[1], static_cast<int>(snapshot[2]));
}

}  // namespace ppo
