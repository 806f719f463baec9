// Generalized Advantage Estimation (Schulman et al. 2016) over a rollout of T steps of N
// environments, arrays laid out [T][N] (step-major), plain C++.
//
// Step t of env i took the action in observation t, received rewards[t][i], and ended the
// episode when terminated or truncated. Episode ends cut the recursion either way; they
// differ in the bootstrap:
//   terminated  the state after the step has value 0: no bootstrap;
//   truncated   the time limit cut the episode off in a state with a value: the caller adds
//               gamma * V(final observation) to that step's reward (bootstrap_truncated()),
//               as the episode's continuation is not in the rollout.
// The last step bootstraps from next_values (V of the observations after the rollout) unless
// it ended its episode.
//   delta_t = r_t + gamma * V_{t+1} * (1 - end_t) - V_t
//   A_t     = delta_t + gamma * lambda * (1 - end_t) * A_{t+1}
//   R_t     = A_t + V_t
#pragma once

#include <cstdint>

namespace ppo {

// rewards[t*N+i] += gamma * final_values[t*N+i] where truncated[t*N+i].
void bootstrap_truncated(float* rewards, const uint8_t* truncated, const float* final_values, int64_t T, int64_t N,
                         double gamma);

// Writes advantages and returns ([T][N]). `ends` = terminated or truncated per step.
void compute_gae(const float* rewards, const float* values, const uint8_t* ends, const float* next_values,
                 int64_t T, int64_t N, double gamma, double lambda, float* advantages, float* returns);

}  // namespace ppo
