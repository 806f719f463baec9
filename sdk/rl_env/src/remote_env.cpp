#include "mlh/rl/remote_env.hpp"

#include <cmath>
#include <vector>

#include <mlh/plugin.hpp>

namespace mlh::rl {

void check_finite_observation(const float* observation, int64_t size, const std::string& who,
                              const std::string& when) {
  for (int64_t i = 0; i < size; ++i)
    if (!std::isfinite(observation[i]))
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, who + ": the observation of " + when + " holds " +
                                                     std::to_string(observation[i]) + " at index " + std::to_string(i));
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace mlh::rl
