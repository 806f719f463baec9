#include "gae.hpp"

namespace ppo {

void bootstrap_truncated(float* rewards, const uint8_t* truncated, const float* final_values, int64_t T, int64_t N,
                         double gamma) {
  for (int64_t k = 0; k < T * N; ++k)
    if (truncated[k]) rewards[k] += static_cast<float>(gamma * final_values[k]);
}

void compute_gae(const float* rewards, const float* values, const uint8_t* ends, const float* next_values,
                 int64_t T, int64_t N, double gamma, double lambda, float* advantages, float* returns) {
  for (int64_t i = 0; i < N; ++i) {
    double last = 0.0;
    for (int64_t t = T - 1; t >= 0; --t) {
      const int64_t k = t * N + i;
      const double next_value = t == T - 1 ? next_values[i] : values[k + N];
      const double not_end = ends[k] ? 0.0 : 1.0;
      const double delta = rewards[k] + gamma * next_value * not_end - values[k];
      last = delta + gamma * lambda * not_end * last;
      advantages[k] = static_cast<float>(last);
      returns[k] = static_cast<float>(last + values[k]);
    }
  }
}

}  // namespace ppo
