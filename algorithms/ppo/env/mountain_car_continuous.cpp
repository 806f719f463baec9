#include "mountain_car_continuous.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace ppo {
namespace {

using Car = MountainCarContinuous;

// Uniform in [low, high) from one 64-bit draw (its top 53 bits): the same numbers on every
// standard library, which std::uniform_real_distribution does not promise.
double uniform(std::mt19937_64& rng, double low, double high) {
  const double unit = static_cast<double>(rng() >> 11) * 0x1.0p-53;
  return low + (high - low) * unit;
}

struct CarStep {
  double position, velocity;
  bool at_goal;
};

// gymnasium's step in the type Real its state has (double before the episode's first step,
// float after), with NumPy 2's rules (NEP 50) for the rest: a Python float meets a NumPy
// value in that value's type (rounded to float32 first where it is float32), float32 meets
// float64 in float64. The position and velocity are gymnasium's before its float32 store,
// from which it decides the goal too.
template <class Real>
CarStep advance(Real position, Real velocity, float action) {
  // force = min(max(action, -1.0), 1.0) is the float32 action within the bounds and a Python
  // float bound outside them; force * power - 0.0025 * cos(3 * position) is then computed in
  // float32 or in double.
  const double hill = 0.0025 * std::cos(static_cast<double>(Real(3) * position));
  Real acceleration;
  if (action < Car::kMinAction || action > Car::kMaxAction) {
    const double force = action < Car::kMinAction ? Car::kMinAction : Car::kMaxAction;
    acceleration = static_cast<Real>(force * Car::kPower - hill);
  } else {
    acceleration = static_cast<Real>(action * static_cast<float>(Car::kPower) - static_cast<float>(hill));
  }
  velocity = std::clamp(Real(velocity + acceleration), Real(-Car::kMaxSpeed), Real(Car::kMaxSpeed));
  position = std::clamp(Real(position + velocity), Real(Car::kMinPosition), Real(Car::kMaxPosition));
  if (position == Real(Car::kMinPosition) && velocity < Real(0)) velocity = Real(0);  // the left wall stops it
  const bool at_goal = position >= Real(Car::kGoalPosition) && velocity >= Real(Car::kGoalVelocity);
  return {static_cast<double>(position), static_cast<double>(velocity), at_goal};
}

}  // namespace

void MountainCarContinuous::reset(std::mt19937_64& rng, float* observation) {
  position_ = uniform(rng, -0.6, -0.4);
  velocity_ = 0.0;
  steps_ = 0;
  write(observation);
}

StepResult MountainCarContinuous::step_continuous(const float* action, float* observation) {
  const CarStep next = steps_ == 0 ? advance<double>(position_, velocity_, action[0])
                                   : advance<float>(static_cast<float>(position_), static_cast<float>(velocity_), action[0]);
  position_ = static_cast<float>(next.position);
  velocity_ = static_cast<float>(next.velocity);
  ++steps_;
  write(observation);
  StepResult r;
  r.terminated = next.at_goal;
  r.solved = next.at_goal;
  // gymnasium's cost takes the action as given, before the clip: math.pow(action[0], 2) * 0.1.
  const double a = action[0];
  r.reward = static_cast<float>((next.at_goal ? 100.0 : 0.0) - a * a * 0.1);
  // The SDK reports one end: reaching the goal on the last step is a termination.
  r.truncated = !next.at_goal && steps_ >= kMaxSteps;
  return r;
}

// Stored as given: a step with steps > 0 reads the state as float32. (Rounding here instead,
// `steps > 0 ? static_cast<float>(x) : x` for both values, is what GCC 12.2's SLP vectorizer
// compiles at -O2/-O3 to keep x unrounded.)
void MountainCarContinuous::set_state(double position, double velocity, int steps) {
  position_ = position;
  velocity_ = velocity;
  steps_ = steps;
}

void MountainCarContinuous::write(float* observation) const {
  observation[0] = static_cast<float>(position_);
  observation[1] = static_cast<float>(velocity_);
}

std::vector<double> MountainCarContinuous::snapshot() const {
  return {position_, velocity_, static_cast<double>(steps_)};
}

void MountainCarContinuous::restore(const std::vector<double>& snapshot) {
  if (snapshot.size() != 3) throw std::invalid_argument("MountainCarContinuous::restore: expected 3 values");
  set_state(snapshot[0], snapshot[1], static_cast<int>(snapshot[2]));
}

}  // namespace ppo
