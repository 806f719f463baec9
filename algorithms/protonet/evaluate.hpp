// Episodes scored without training: what validation, eval and the precision check share.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "trainer.hpp"

namespace protonet {

struct EpisodeStats {
  double loss = 0, accuracy = 0;  // means over the episodes
  std::vector<double> accuracies;  // each episode's
};

// Runs `episodes` of `set` in eval mode without gradients, assembled ahead by the plan's data
// workers; `on_episode` hears the count done after each.
EpisodeStats evaluate(Trainer& l, const ImageSet& set, const std::vector<EpisodeIndices>& episodes,
                      const std::function<void(int64_t)>& on_episode = nullptr);

}  // namespace protonet
