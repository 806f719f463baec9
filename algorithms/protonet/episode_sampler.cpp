#include "episode_sampler.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include <ATen/ATen.h>
#include <mlh/plugin.hpp>

namespace protonet {

uint64_t uniform_index(std::mt19937_64& rng, uint64_t n) {
  // Rejection sampling over the largest multiple of n: unbiased and portable.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t r;
  do {
    r = rng();
  } while (r >= limit);
  return r % n;
}

namespace {

// The first k of a partial Fisher-Yates shuffle of `items` (k <= size).
template <class T>
std::vector<T> choose(std::vector<T> items, size_t k, std::mt19937_64& rng) {
  for (size_t i = 0; i < k; ++i) {
    const size_t j = i + uniform_index(rng, items.size() - i);
    std::swap(items[i], items[j]);
  }
  items.resize(k);
  return items;
}

}  // namespace

EpisodeSampler::EpisodeSampler(const ImageSet& set) {
  by_class_.resize(set.class_names.size());
  for (size_t i = 0; i < set.labels.size(); ++i) {
    const int32_t label = set.labels[i];
    if (label < 0) continue;
    if (static_cast<size_t>(label) >= by_class_.size()) by_class_.resize(label + 1);
    by_class_[label].push_back(static_cast<int64_t>(i));
  }
}

int EpisodeSampler::eligible_classes(int per_class) const {
  int n = 0;
  for (const auto& images : by_class_) n += static_cast<int>(images.size()) >= per_class;
  return n;
}

EpisodeIndices EpisodeSampler::sample(int way, int shot, int query, std::mt19937_64& rng) const {
  const int per_class = shot + query;
  std::vector<int32_t> eligible;
  for (size_t c = 0; c < by_class_.size(); ++c)
    if (static_cast<int>(by_class_[c].size()) >= per_class) eligible.push_back(static_cast<int32_t>(c));
  if (way < 1 || shot < 1 || query < 1 || static_cast<int>(eligible.size()) < way)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT,
                     "cannot draw a " + std::to_string(way) + "-way " + std::to_string(shot) + "-shot " +
                         std::to_string(query) + "-query episode: " + std::to_string(eligible.size()) +
                         " classes have at least " + std::to_string(per_class) + " images");
  EpisodeIndices e;
  e.way = way;
  e.shot = shot;
  e.query = query;
  e.classes = choose(eligible, static_cast<size_t>(way), rng);
  std::vector<std::vector<int64_t>> picked;
  for (int32_t c : e.classes) picked.push_back(choose(by_class_[c], static_cast<size_t>(per_class), rng));
  e.images.reserve(static_cast<size_t>(way) * per_class);
  for (const auto& p : picked) e.images.insert(e.images.end(), p.begin(), p.begin() + shot);
  for (const auto& p : picked) e.images.insert(e.images.end(), p.begin() + shot, p.end());
  return e;
}

at::Tensor images_to_tensor(const ImageSet& set, const std::vector<int64_t>& indices) {
  const int64_t n = static_cast<int64_t>(indices.size());
  const size_t bytes = set.image_bytes();
  at::Tensor raw = at::empty({n, set.channels, set.height, set.width}, at::kByte);
  uint8_t* out = raw.data_ptr<uint8_t>();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t index = indices[static_cast<size_t>(i)];
    if (index < 0 || static_cast<size_t>(index) >= set.size())
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "image index " + std::to_string(index) + " out of range");
    std::memcpy(out + i * bytes, set.image(static_cast<size_t>(index)), bytes);
  }
  return raw.to(at::kFloat).div_(255.0);
}

Episode assemble_episode(const ImageSet& set, const EpisodeIndices& indices) {
  Episode e;
  e.way = indices.way;
  e.shot = indices.shot;
  e.query = indices.query;
  e.classes = indices.classes;
  const size_t n_support = static_cast<size_t>(indices.way) * indices.shot;
  const int64_t k = static_cast<int64_t>(n_support);
  e.images = images_to_tensor(set, indices.images);
  e.support = e.images.narrow(0, 0, k);
  e.query_images = e.images.narrow(0, k, e.images.size(0) - k);
  e.query_targets = at::arange(indices.way, at::kLong).repeat_interleave(indices.query);
  return e;
}

}  // namespace protonet
