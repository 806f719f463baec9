#include "data_sets.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <mlh/format.hpp>
#include <mlh/runtime/command_setup.hpp>
#include <mlh/runtime/device_transfer.hpp>

#include "data/folder.hpp"
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
    throw DataError(what + " data: " + e.what());
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
    throw DataError(what + " data: " + e.what());
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
    // At training the test set is read whole, every file decoded, so that a file that does
    // not read fails now and not at eval after the training (a cache makes eval's read free).
    if (known_are_trained) report_folder_data(ctx, cfg, spec, other);
    listed = known_are_trained ? present_classes(load_checked(data.load, spec, other)) : classes_of(data, spec, other);
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

int64_t held_out_count(int64_t images, double fraction) {
  if (images < 2) return 0;
  return std::clamp<int64_t>(std::llround(fraction * static_cast<double>(images)), 1, images - 1);
}

std::pair<ImageSet, ImageSet> hold_out(const ImageSet& set, double fraction, uint64_t seed) {
  std::map<int32_t, std::vector<int64_t>> by_class;
  for (size_t i = 0; i < set.size(); ++i) by_class[set.labels[i]].push_back(static_cast<int64_t>(i));
  std::mt19937_64 rng(seed ^ 0x5eed0f0a1ULL);
  std::vector<int64_t> train, val;
  for (auto& [label, images] : by_class) {
    for (size_t i = images.size(); i > 1; --i) std::swap(images[i - 1], images[uniform_index(rng, i)]);
    const auto n_val = static_cast<size_t>(held_out_count(static_cast<int64_t>(images.size()), fraction));
    val.insert(val.end(), images.begin(), images.begin() + n_val);
    train.insert(train.end(), images.begin() + n_val, images.end());
  }
  std::sort(train.begin(), train.end());
  std::sort(val.begin(), val.end());
  return {subset(set, train), subset(set, val)};
}

std::pair<ImageSet, ImageSet> split_off_classes(const ImageSet& set, size_t count) {
  std::vector<int32_t> present;
  for (const ClassSize& c : class_sizes(set))
    present.push_back(static_cast<int32_t>(
        std::find(set.class_names.begin(), set.class_names.end(), c.name) - set.class_names.begin()));
  // Class k of n goes to the second set where floor((k+1)*count/n) steps up: `count` of them, evenly spread.
  std::set<int32_t> second;
  const size_t n = present.size();
  for (size_t k = 0; k < n; ++k)
    if ((k + 1) * count / n > k * count / n) second.insert(present[k]);
  std::vector<int64_t> first_images, second_images;
  for (size_t i = 0; i < set.size(); ++i)
    (second.count(set.labels[i]) ? second_images : first_images).push_back(static_cast<int64_t>(i));
  return {subset(set, first_images), subset(set, second_images)};
}

double fitted_val_fraction(const std::vector<ClassSize>& classes, const Config& cfg, std::string* why) {
  std::vector<int64_t> sizes;
  for (const ClassSize& c : classes) sizes.push_back(c.images);
  if (sizes.empty()) return cfg.val_fraction;
  std::nth_element(sizes.begin(), sizes.begin() + static_cast<std::ptrdiff_t>(sizes.size() / 2), sizes.end());
  const int64_t typical = sizes[sizes.size() / 2];
  const int64_t want = cfg.test.shot + 1, held = std::llround(cfg.val_fraction * static_cast<double>(typical));
  // Only where training keeps room for a support set and a query image of its own.
  if (held >= want || typical - want < cfg.train.shot + 1) return cfg.val_fraction;
  const double fraction = std::ceil(100.0 * static_cast<double>(want) / static_cast<double>(typical)) / 100.0;
  if (why)
    *why = "validation: data.val_fraction " + mlh::fixed(cfg.val_fraction, 2) + " would hold out " + std::to_string(held) +
           " of a class's " + std::to_string(typical) + " images, too few for a " + std::to_string(cfg.test.shot) +
           "-shot validation episode with a query image: holding out " + mlh::fixed(fraction, 2) + " (" +
           std::to_string(std::llround(fraction * static_cast<double>(typical))) + " images; set data.val_fraction=" +
           mlh::fixed(fraction, 2) + " to ask for it)";
  return fraction;
}

TrainingSets load_training_sets(const Config& cfg, const DataSources& data, const std::function<void(const std::string&)>& log) {
  TrainingSets sets;
  sets.train = load_checked(data.load, cfg.train_data, "training");
  if (cfg.has_val_classes) {
    sets.val = load_checked(data.load, cfg.val_data, "validation");
  } else if (cfg.validate) {
    std::string why;
    const double fraction = fitted_val_fraction(class_sizes(sets.train), cfg, &why);
    if (!why.empty() && log) log(why);
    std::tie(sets.train, sets.val) = hold_out(sets.train, fraction, cfg.seed);
  }
  return sets;
}

std::vector<Episode> training_episodes(const ImageSet& set, const EpisodeShape& shape, int n, uint64_t seed) {
  const EpisodeSampler sampler(set);
  std::mt19937_64 rng(seed);
  std::vector<Episode> episodes;
  for (int i = 0; i < n; ++i)
    episodes.push_back(assemble_episode(set, sampler.sample(shape.way, shape.shot, shape.query, rng)));
  return episodes;
}

const ShapeFields& train_shape_fields() {
  static const ShapeFields f{"train_way", "train_shot", "train_query"};
  return f;
}

const ShapeFields& test_shape_fields() {
  static const ShapeFields f{"test_way", "test_shot", "test_query"};
  return f;
}

std::vector<ClassSize> class_sizes(const ImageSet& set) {
  std::vector<ClassSize> classes(set.class_names.size());
  for (size_t i = 0; i < classes.size(); ++i) classes[i].name = set.class_names[i];
  for (int32_t label : set.labels)
    if (label >= 0 && static_cast<size_t>(label) < classes.size()) ++classes[static_cast<size_t>(label)].images;
  classes.erase(std::remove_if(classes.begin(), classes.end(), [](const ClassSize& c) { return c.images == 0; }),
                classes.end());
  return classes;
}

void fitted_to_data(const mlh::RunContext& ctx, bool strict, const std::string& field, const std::string& change,
                    bool binding) {
  if (binding && mlh::rt::set_by_user(ctx, field))
    throw DataError("config field '" + field + "' was set, and the data cannot give it: " + change);
  if (strict) throw DataError(change + "; data.strict refuses to change '" + field + "' to fit the data");
  ctx.warn(change);
}

EpisodeShape fit_shape(const mlh::RunContext& ctx, const EpisodeShape& asked, const ImageSet& set,
                       const ShapeFields& fields, const std::string& what, const DatasetSpec& spec, bool strict,
                       bool own_fields) {
  const std::vector<ClassSize> classes = class_sizes(set);
  if (!spec.splits.empty()) {
    const int64_t per_class = asked.shot + asked.query;
    const auto enough = std::count_if(classes.begin(), classes.end(), [&](const ClassSize& c) { return c.images >= per_class; });
    if (enough < asked.way)
      throw DataError(what + " set: split '" + spec.split + "' of data.splits '" + spec.splits + "' has " +
                      std::to_string(enough) + " classes with " + std::to_string(per_class) +
                      " images or more, fewer than the " + std::to_string(asked.way) + "-way episodes need");
  }
  const EpisodeFit fit = fit_episodes(classes, asked, fields, what);
  for (size_t i = 0; i < fit.changes.size(); ++i)
    fitted_to_data(ctx, strict, fit.changed_fields[i], fit.changes[i], own_fields);
  if (!fit.dropped.empty()) {
    std::string names;
    for (size_t i = 0; i < fit.dropped.size() && i < 10; ++i)
      names += (i ? ", '" : "'") + fit.dropped[i].name + "' (" + std::to_string(fit.dropped[i].images) + ")";
    if (fit.dropped.size() > 10) names += ", ... (" + std::to_string(fit.dropped.size() - 10) + " more)";
    const std::string line = what + " set: " + std::to_string(fit.dropped.size()) +
                             (fit.dropped.size() == 1 ? " class has" : " classes have") + " fewer than the " +
                             std::to_string(fit.shape.shot + fit.shape.query) + " images a " + shape_name(fit.shape) +
                             " episode needs and " + (fit.dropped.size() == 1 ? "is" : "are") + " left out: " + names;
    if (strict) throw DataError(line + "; data.strict refuses to leave classes out");
    ctx.warn(line);
  }
  return fit.shape;
}

void report_folder_data(const mlh::RunContext& ctx, const Config& cfg, const DatasetSpec& spec, const std::string& what) {
  if (spec.format != "folder") return;
  FolderSurvey survey;
  try {
    survey = survey_folder(spec);
  } catch (const DataError& e) {
    throw DataError(what + " data: " + e.what());
  }
  if (!survey.skipped.empty()) {
    std::string names;
    for (size_t i = 0; i < survey.skipped.size() && i < 3; ++i) names += (i ? ", '" : "'") + survey.skipped[i] + "'";
    if (survey.skipped.size() > 3) names += ", ...";
    const bool one = survey.skipped.size() == 1;
    const std::string found = what + " data '" + spec.root + "': " + std::to_string(survey.skipped.size()) +
                              (one ? " file is" : " files are") + " not a .png/.jpg/.jpeg image";
    if (cfg.strict_data) throw DataError(found + " (" + names + "); data.strict refuses files that are not images");
    ctx.warn(found + " and " + (one ? "is" : "are") + " skipped: " + names);
  }
  bool converts = false;
  const std::string line = what + " data '" + spec.root + "': " + describe_stored_images(survey, spec, &converts);
  // Resizing or converting by default is what a user may not expect: said as a warning, with
  // the fields that choose it; by the user's own settings it is information.
  const bool by_default = !mlh::rt::set_by_user(ctx, "data.height") && !mlh::rt::set_by_user(ctx, "data.width") &&
                          !mlh::rt::set_by_user(ctx, "data.channels");
  if (converts && by_default)
    ctx.warn(line);
  else
    ctx.info(line);
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
