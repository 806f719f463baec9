#include "evaluate.hpp"

#include <optional>

#include <mlh/runtime/prefetcher.hpp>
#include <torch/utils.h>

#include "data_sets.hpp"

namespace protonet {

EpisodeStats evaluate(Trainer& l, const ImageSet& set, const std::vector<EpisodeIndices>& episodes,
                      const std::function<void(int64_t)>& on_episode) {
  torch::NoGradGuard no_grad;
  const bool was_training = l.net->is_training();
  l.net->eval();
  const int64_t n = static_cast<int64_t>(episodes.size());
  mlh::rt::Prefetcher<Episode> batches(
      [&](int64_t i) -> std::optional<Episode> {
        if (i >= n) return std::nullopt;
        return ready_for(l.plan, assemble_episode(set, episodes[static_cast<size_t>(i)]));
      },
      mlh::rt::prefetch_depth(l.plan.prefetch_factor, l.plan.dataloader_workers),
      static_cast<int>(l.plan.dataloader_workers));
  EpisodeStats s;
  int64_t i = 0;
  while (auto e = batches.next()) {
    const ProtoLoss r = l.forward(*e, false);
    s.loss += r.loss.item<double>();
    const double accuracy = r.accuracy.item<double>();
    s.accuracies.push_back(accuracy);
    s.accuracy += accuracy;
    if (on_episode) on_episode(++i);
  }
  if (n > 0) {
    s.loss /= static_cast<double>(n);
    s.accuracy /= static_cast<double>(n);
  }
  l.net->train(was_training);
  return s;
}

}  // namespace protonet
