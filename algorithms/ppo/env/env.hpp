// The environments PPO trains on, behind one interface, free of LibTorch so they build and
// test in seconds. An observation is a flat float array of observation_size() values laid
// out as observation_shape() (CartPole: {4}; puzzles: {planes, size, size}).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace ppo {

// The outcome of one step. `terminated`: the episode ended by the environment's own rules
// (the pole fell, the puzzle was solved); its value after this step is 0. `truncated`: it
// was cut off by a time/step limit; the value of the state it stopped in is not 0, and PPO
// bootstraps from it. Both can be false; at most one is true.
struct StepResult {
  float reward = 0.0f;
  bool terminated = false;
  bool truncated = false;
  bool solved = false;         // puzzles: this step solved the puzzle (CartPole: never)
  bool invalid_move = false;   // puzzles: the action changed nothing
};

class Env {
 public:
  virtual ~Env() = default;
  virtual std::string name() const = 0;
  virtual std::vector<int64_t> observation_shape() const = 0;
  int64_t observation_size() const;  // product of observation_shape()
  virtual int num_actions() const = 0;
  // Starts an episode; writes the first observation.
  virtual void reset(std::mt19937_64& rng, float* observation) = 0;
  // Takes `action` in [0, num_actions()); writes the observation after it (the final one
  // when the episode ended: the caller resets).
  virtual StepResult step(int action, float* observation) = 0;
  // Which actions change the state now (1) and which would be invalid moves (0). CartPole:
  // all valid. Policies may mask with it; the environment never requires that.
  virtual void action_mask(uint8_t* mask) const;
  // The state of the running episode as numbers, for checkpoints that resume exactly; empty
  // when the env cannot capture it (a restored VectorEnv then starts a fresh episode).
  virtual std::vector<double> snapshot() const { return {}; }
  // Puts back what snapshot() returned.
  virtual void restore(const std::vector<double>& /*snapshot*/) {}
};

// Makes a fresh environment; VectorEnv calls it once per slot.
using EnvFactory = std::function<std::unique_ptr<Env>()>;

}  // namespace ppo
