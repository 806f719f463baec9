#include "env.hpp"

#include <algorithm>
#include <functional>
#include <numeric>

namespace ppo {

int64_t Env::observation_size() const {
  const std::vector<int64_t> shape = observation_shape();
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<int64_t>());
}

void Env::action_mask(uint8_t* mask) const { std::fill(mask, mask + num_actions(), uint8_t{1}); }

}  // namespace ppo
