#include "data_sets.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <mlh/runtime/device_transfer.hpp>

#include "data/splits.hpp"

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

std::vector<std::string> present_classes(const ImageSet& set) {
  std::vector<bool> present(set.class_names.size(), false);
  for (int32_t label : set.labels)
    if (label >= 0 && static_cast<size_t>(label) < present.size()) present[static_cast<size_t>(label)] = true;
  std::vector<std::string> out;
  for (size_t i = 0; i < present.size(); ++i)
    if (present[i]) out.push_back(set.class_names[i]);
  return out;
}

std::vector<std::string> classes_of(const DataSources& data, const DatasetSpec& spec, const std::string& what) {
  if (!data.list_classes) return present_classes(load_checked(data.load, spec, what));
  try {
    return data.list_classes(spec);
  } catch (const DataError& e) {
    throw mlh::Error(MLH_ERR_IO, what + " data: " + e.what());
  }
}

size_t check_disjoint_classes(const mlh::RunContext& ctx, const Config& cfg, const std::vector<std::string>& trained,
                              const std::vector<std::string>& other, const std::string& what) {
  const std::string& format = cfg.train_data.format;
  const std::vector<std::string> shared = shared_classes(format, other, trained);
  if (shared.empty()) return 0;
  std::set<std::string> identities;
  for (const std::string& name : other) identities.insert(class_identity(format, name));
  std::string examples;
  for (size_t i = 0; i < shared.size() && i < 3; ++i) examples += (i ? ", '" : "'") + shared[i] + "'";
  const std::string fact = std::to_string(shared.size()) + " of the " + std::to_string(identities.size()) + " " + what +
                           " classes are training classes (" + examples + (shared.size() > 3 ? ", ..." : "") + ")";
  if (cfg.allow_class_overlap) {
    ctx.warn(fact + "; allowed by data.allow_class_overlap");
    return shared.size();
  }
  std::string how;
  if (format == "omniglot" || format == "miniimagenet")
    how = "give split lists: data.splits=" + std::string(format == "omniglot" ? "vinyals" : "ravi") +
          " (the standard split, shipped with the plugin) or data.splits=DIR (a folder of train, val and test lists)";
  else if (format == "idx")
    how = "give disjoint data.train_classes, data.val_classes and data.test_classes";
  else
    how = "give a data.test_root whose class folders are not training classes";
  throw mlh::Error(MLH_ERR_INVALID_ARGUMENT,
                   fact + ": a few-shot " + what + " on trained classes measures memory, not learning new classes; " +
                       how + ", or set data.allow_class_overlap=true if this is intended");
}

void check_test_classes(const mlh::RunContext& ctx, const Config& cfg, const DataSources& data,
                        const std::vector<std::string>& known, bool known_are_trained) {
  const std::string other = known_are_trained ? "test" : "training";
  const DatasetSpec& spec = known_are_trained ? cfg.test_data : cfg.train_data;
  std::vector<std::string> listed;
  try {
    listed = classes_of(data, spec, other);
  } catch (const mlh::Error& e) {
    // At training, test data that is there but wrong (a listed class it lacks, an unreadable
    // file) would fail eval after the whole training: the same error now. Test data not there
    // yet may come before eval, and at eval the training data may be elsewhere: a warning.
    std::error_code ec;
    if (known_are_trained && std::filesystem::exists(spec.root, ec)) throw;
    ctx.warn("cannot list the " + other + " classes to check the test classes against the training classes" +
             (known_are_trained ? " (eval will)" : "") + ": " + e.what());
    return;
  }
  check_disjoint_classes(ctx, cfg, known_are_trained ? known : listed, known_are_trained ? listed : known, "test");
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

TrainingSets load_training_sets(const Config& cfg, const DataSources& data) {
  TrainingSets sets;
  sets.train = load_checked(data.load, cfg.train_data, "training");
  if (cfg.has_val_classes) sets.val = load_checked(data.load, cfg.val_data, "validation");
  else if (cfg.validate) std::tie(sets.train, sets.val) = hold_out(sets.train, cfg.val_fraction, cfg.seed);
  return sets;
}

EpisodeShape fit_shape(const mlh::RunContext& ctx, EpisodeShape s, const EpisodeSampler& sampler,
                       const std::string& what, const DatasetSpec& spec) {
  const int classes = sampler.eligible_classes(s.shot + s.query);
  if (!spec.splits.empty() && classes < s.way)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT,
                     what + " set: split '" + spec.split + "' of data.splits '" + spec.splits + "' has " +
                         std::to_string(classes) + " classes with " + std::to_string(s.shot + s.query) +
                         " images or more, fewer than the " + std::to_string(s.way) + "-way episodes need");
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

ImageSet synthetic_set(int classes, int per_class, int height, int width, int channels) {
  ImageSet s;
  s.channels = channels;
  s.height = height;
  s.width = width;
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
