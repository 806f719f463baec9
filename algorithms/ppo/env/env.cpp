#include "env.hpp"

#include <cmath>

#include <mlh/plugin.hpp>

namespace ppo {

void check_finite_observation(const float* observation, int64_t size, const std::string& who,
                              const std::string& when) {
  for (int64_t i = 0; i < size; ++i)
    if (!std::isfinite(observation[i]))
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, who + ": the observation of " + when + " holds " +
                                                     std::to_string(observation[i]) + " at index " + std::to_string(i));
}

}  // namespace ppo
