#include "episode_data.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <mlh/runtime/device_transfer.hpp>

namespace protonet {

namespace {

// The images of `set` at `keep`, labels and class names kept.
ImageSet subset(const ImageSet& set, const std::vector<int64_t>& keep) {
  ImageSet out;
  out.channels = set.channels;
  out.height = set.height;
  out.width = set.width;
  out.class_names = set.class_names;
  out.pixels.resize(keep.size() * set.image_bytes());
  out.labels.reserve(keep.size());
  for (size_t i = 0; i < keep.size(); ++i) {
    std::copy_n(set.image(keep[i]), set.image_bytes(), out.pixels.data() + i * set.image_bytes());
    out.labels.push_back(set.labels[keep[i]]);
  }
  return out;
}

}  // namespace

std::string shape_name(const EpisodeShape& s) {
  return std::to_string(s.way) + "-way " + std::to_string(s.shot) + "-shot " + std::to_string(s.query) + "-query";
}

ImageSet load_checked(const DatasetLoader& load, const DatasetSpec& spec, const std::string& what) {
  try {
    ImageSet set = load(spec);
    if (set.size() == 0) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, what + " set is empty ('" + spec.root + "')");
    return set;
  } catch (const DataError& e) {
    throw mlh::Error(MLH_ERR_IO, what + " data: " + e.what());
  }
}

std::pair<ImageSet, ImageSet> hold_out(const ImageSet& set, double fraction, uint64_t seed) {
  std::map<int32_t, std::vector<int64_t>> by_class;
  for (size_t i = 0; i < set.size(); ++i) by_class[set.labels[i]].push_back(static_cast<int64_t>(i));
  std::mt19937_64 rng(seed ^ 0x5eed0f0a1ULL);
  std::vector<int64_t> train, val;
  for (auto& [label, images] : by_class) {
    for (size_t i = images.size(); i > 1; --i) std::swap(images[i - 1], images[uniform_index(rng, i)]);
    size_t n_val = static_cast<size_t>(std::llround(fraction * static_cast<double>(images.size())));
    if (images.size() >= 2) n_val = std::clamp<size_t>(n_val, 1, images.size() - 1);
    else n_val = 0;
    val.insert(val.end(), images.begin(), images.begin() + n_val);
    train.insert(train.end(), images.begin() + n_val, images.end());
  }
  std::sort(train.begin(), train.end());
  std::sort(val.begin(), val.end());
  return {subset(set, train), subset(set, val)};
}

EpisodeShape fit_shape(const mlh::RunContext& ctx, EpisodeShape s, const EpisodeSampler& sampler,
                       const std::string& what) {
  const int classes = sampler.eligible_classes(s.shot + s.query);
  if (classes < 2)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, what + " set: fewer than 2 classes have " +
                                                   std::to_string(s.shot + s.query) + " images");
  if (classes < s.way) {
    ctx.warn(what + " episodes: " + std::to_string(s.way) + "-way asked, " + std::to_string(classes) +
             " classes available: using " + std::to_string(classes) + "-way");
    s.way = classes;
  }
  return s;
}

std::vector<EpisodeIndices> sample_episodes(const EpisodeSampler& sampler, const EpisodeShape& shape, int64_t n,
                                            std::mt19937_64& rng) {
  std::vector<EpisodeIndices> out;
  out.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out.push_back(sampler.sample(shape.way, shape.shot, shape.query, rng));
  return out;
}

Episode ready_for(const mlh::rt::RuntimePlan& plan, Episode e) {
  if (!mlh::rt::pins_batches(plan.device, plan.pinned_memory)) return e;
  const int64_t support = e.support.size(0);
  e.images = mlh::rt::pin_for_transfer(e.images, plan.device, plan.pinned_memory);
  e.support = e.images.narrow(0, 0, support);
  e.query_images = e.images.narrow(0, support, e.images.size(0) - support);
  e.query_targets = mlh::rt::pin_for_transfer(e.query_targets, plan.device, plan.pinned_memory);
  return e;
}

ImageSet synthetic_set(int classes, int per_class) {
  ImageSet s;
  s.channels = 1;
  s.height = s.width = 28;
  std::mt19937_64 rng(7);
  s.pixels.resize(static_cast<size_t>(classes) * per_class * s.image_bytes());
  for (auto& p : s.pixels) p = static_cast<uint8_t>(rng() & 0xff);
  for (int c = 0; c < classes; ++c) {
    s.class_names.push_back(std::to_string(c));
    for (int i = 0; i < per_class; ++i) s.labels.push_back(c);
  }
  return s;
}

}  // namespace protonet
