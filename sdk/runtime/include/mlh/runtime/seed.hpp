// Seeding every random number generator a training run draws from, and saving and
// restoring their states so that a resumed run continues the same random streams.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace mlh::rt {

// The runtime's generator for host-side randomness (shuffling, augmentation choices):
// using it instead of a private one makes that randomness seeded and checkpointed too.
// Not thread-safe: draw from it on the training thread.
std::mt19937_64& host_rng();

// Seeds the CPU generator, every CUDA device's generator and host_rng().
void seed_everything(uint64_t seed);

// The states of all those generators, as tensors so that they go into a checkpoint.
struct RngState {
  at::Tensor cpu;                 // uint8, the CPU generator's state
  std::vector<at::Tensor> cuda;   // uint8, one per CUDA device (empty without CUDA)
  std::string host;               // host_rng() in its textual form

  // Keys "rng.cpu", "rng.cuda.<index>", "rng.host" (uint8 tensors on the CPU).
  std::map<std::string, at::Tensor> to_tensors() const;
  // Throws mlh::Error naming the key when "rng.cpu" or "rng.host" is missing or malformed.
  static RngState from_tensors(const std::map<std::string, at::Tensor>& tensors);
};

RngState capture_rng_state();

// CUDA states are restored for the devices both the saved state and this process have, so a
// checkpoint from another machine (or from a CPU run) still restores what it can.
void restore_rng_state(const RngState& state);

}  // namespace mlh::rt
