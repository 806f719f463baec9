// Example environment library: a small grid world for PPO, written against the installed SDK
// (mlh/rl_env.hpp) and loaded by path from the config:
//   host --algorithm ppo --set env=library --set library.path=build/libgrid_world.so
//
// The agent starts on a random cell of a size x size grid and walks (0 up, 1 down, 2 left,
// 3 right; into a wall it stays) to the goal in the bottom-right corner. Reward: +1 on the
// step that reaches it (terminated, solved), step_reward (-0.05) on every other step; an
// episode is cut off after max_steps (truncated). Observation: {row, col} / (size - 1), two
// floats. The best policy's mean return on 5 x 5 is 0.84 (the goal is 100/24 steps away on
// average); a random walk's is -0.93.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <mlh/rl_env.hpp>

namespace {

class GridWorld final : public mlh::Environment {
 public:
  // Settings (library.settings), each optional: size (2-32, 5), max_steps (>= 1, 30),
  // step_reward (-0.05).
  explicit GridWorld(const nlohmann::json& settings) {
    for (const auto& item : settings.items())
      if (item.key() != "size" && item.key() != "max_steps" && item.key() != "step_reward")
        throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "grid-world: unknown setting '" + item.key() +
                                                       "' (size, max_steps, step_reward)");
    size_ = settings.value("size", 5);
    max_steps_ = settings.value("max_steps", 30);
    step_reward_ = settings.value("step_reward", -0.05f);
    if (size_ < 2 || size_ > 32)
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "grid-world: setting 'size' must be 2 to 32, got " + std::to_string(size_));
    if (max_steps_ < 1)
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "grid-world: setting 'max_steps' must be >= 1");
  }

  std::string name() const override { return "grid-world"; }
  std::vector<int64_t> observation_shape() const override { return {2}; }
  int num_actions() const override { return 4; }

  void reset(std::mt19937_64& rng, float* observation) override {
    // Any cell but the goal, uniformly.
    const int cell = std::uniform_int_distribution<int>(0, size_ * size_ - 2)(rng);
    row_ = cell / size_;
    col_ = cell % size_;
    steps_ = 0;
    observe(observation);
  }

  mlh::StepResult step(int action, float* observation) override {
    const int row = row_ + (action == 1) - (action == 0);
    const int col = col_ + (action == 3) - (action == 2);
    mlh::StepResult r;
    r.invalid_move = row < 0 || row >= size_ || col < 0 || col >= size_;
    if (!r.invalid_move) row_ = row, col_ = col;
    ++steps_;
    r.solved = r.terminated = row_ == size_ - 1 && col_ == size_ - 1;
    r.reward = r.solved ? 1.0f : step_reward_;
    r.truncated = !r.terminated && steps_ >= max_steps_;
    observe(observation);
    return r;
  }

  // The whole state in three numbers: checkpoints resume the running episodes exactly.
  std::vector<double> snapshot() const override { return {double(row_), double(col_), double(steps_)}; }
  void restore(const std::vector<double>& s) override {
    if (s.size() != 3) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "grid-world: a snapshot has 3 numbers");
    row_ = int(s[0]), col_ = int(s[1]), steps_ = int(s[2]);
  }

 private:
  void observe(float* observation) const {
    observation[0] = float(row_) / float(size_ - 1);
    observation[1] = float(col_) / float(size_ - 1);
  }
  int size_ = 5, max_steps_ = 30;
  float step_reward_ = -0.05f;
  int row_ = 0, col_ = 0, steps_ = 0;
};

}  // namespace

MLH_RL_ENV(GridWorld, "grid-world")
