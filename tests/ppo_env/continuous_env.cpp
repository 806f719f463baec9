// A test environment library of continuous actions, written with the SDK's C++ interface
// (mlh::ContinuousEnvironment, MLH_RL_ENV) as a user's would be: a point on a line that should
// reach 0. Observation {x}; action: a velocity in [-1, 1] (the host clips), x += 0.1 * v;
// reward -|x|; truncated after 50 steps. CONTINUOUS_ENV_KIND builds faulty variants:
//   "bad_bounds"  the bounds say low > high
//   "both_kinds"  it also says it has 2 discrete actions
#include <cmath>
#include <random>
#include <string>

#include <mlh/rl_env.hpp>

#ifndef CONTINUOUS_ENV_KIND
#define CONTINUOUS_ENV_KIND "good"
#endif

namespace {

class PointEnv final : public mlh::Environment {
 public:
  std::string name() const override { return "point"; }
  std::vector<int64_t> observation_shape() const override { return {1}; }
  int num_actions() const override { return std::string(CONTINUOUS_ENV_KIND) == "both_kinds" ? 2 : 0; }
  mlh::ActionBounds action_bounds() const override {
    if (std::string(CONTINUOUS_ENV_KIND) == "bad_bounds") return {{1.0f}, {-1.0f}};
    return {{-1.0f}, {1.0f}};
  }
  void reset(std::mt19937_64& rng, float* observation) override {
    x_ = std::uniform_real_distribution<double>(-1.0, 1.0)(rng);
    steps_ = 0;
    observation[0] = static_cast<float>(x_);
  }
  mlh::StepResult step(int, float*) override { throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "continuous only"); }
  mlh::StepResult step_continuous(const float* action, float* observation) override {
    if (action[0] < -1.0f || action[0] > 1.0f)
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "action " + std::to_string(action[0]) + " is out of bounds");
    x_ += 0.1 * action[0];
    ++steps_;
    observation[0] = static_cast<float>(x_);
    mlh::StepResult r;
    r.reward = static_cast<float>(-std::abs(x_));
    r.truncated = steps_ >= 50;
    return r;
  }
  std::vector<double> snapshot() const override { return {x_, static_cast<double>(steps_)}; }
  void restore(const std::vector<double>& s) override {
    x_ = s.at(0);
    steps_ = static_cast<int>(s.at(1));
  }

 private:
  double x_ = 0;
  int steps_ = 0;
};

}  // namespace

MLH_RL_ENV(PointEnv, "point")
