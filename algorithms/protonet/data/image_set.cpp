// load_dataset: checks the spec, picks the loader, and goes through the cache when
// spec.cache_dir is set.
#include <cstdio>
#include <exception>
#include <functional>

#include "cache.hpp"
#include "decode.hpp"
#include "folder.hpp"
#include "idx.hpp"
#include "image_set.hpp"
#include "miniimagenet.hpp"
#include "omniglot.hpp"

namespace protonet {
namespace {

const char* const kFormats = "idx, omniglot, miniimagenet, folder";

void check_spec(const DatasetSpec& spec) {
  const std::string what = "dataset '" + spec.root + "' (format " + spec.format + "): ";
  if (spec.format != "idx" && spec.format != "omniglot" && spec.format != "miniimagenet" && spec.format != "folder")
    throw DataError("dataset '" + spec.root + "': unknown format '" + spec.format + "' (known: " + kFormats + ")");
  if (spec.height <= 0 || spec.width <= 0 || spec.height > 65536 || spec.width > 65536)
    throw DataError(what + "image size " + std::to_string(spec.height) + " x " + std::to_string(spec.width) +
                    " is not positive");
  if (spec.channels != 1 && spec.channels != 3)
    throw DataError(what + "channels must be 1 or 3, not " + std::to_string(spec.channels));
}

// The files a load reads, and how to decode them; file-based formats list their images
// first (the plan) so that the cache can fingerprint them before anything is decoded.
struct Prepared {
  std::vector<std::string> sources;
  std::function<ImageSet()> build;
};

Prepared prepare(const DatasetSpec& spec) {
  if (spec.format == "idx") return {{spec.root, spec.labels}, [spec] { return load_idx(spec); }};
  FilePlan plan = spec.format == "omniglot"       ? plan_omniglot(spec)
                  : spec.format == "miniimagenet" ? plan_miniimagenet(spec)
                                                  : plan_folder(spec);
  std::vector<std::string> sources = std::move(plan.sources);
  const DecodeOptions options{spec.channels, spec.height, spec.width, spec.invert};
  return {std::move(sources), [plan = std::move(plan), options] { return decode_plan(plan, options); }};
}

}  // namespace

std::vector<std::string> dataset_class_names(const DatasetSpec& spec) {
  check_spec(spec);
  if (spec.format == "idx") return idx_class_names(spec);
  return (spec.format == "omniglot" ? plan_omniglot(spec)
          : spec.format == "miniimagenet" ? plan_miniimagenet(spec)
                                          : plan_folder(spec))
      .class_names;
}

std::vector<ClassSize> dataset_class_sizes(const DatasetSpec& spec) {
  check_spec(spec);
  if (spec.format == "idx") return idx_class_sizes(spec);
  const FilePlan plan = spec.format == "omniglot"       ? plan_omniglot(spec)
                        : spec.format == "miniimagenet" ? plan_miniimagenet(spec)
                                                        : plan_folder(spec);
  std::vector<ClassSize> out(plan.class_names.size());
  for (size_t i = 0; i < out.size(); ++i) out[i].name = plan.class_names[i];
  for (const ImageItem& item : plan.items)
    if (item.label >= 0 && static_cast<size_t>(item.label) < out.size()) ++out[static_cast<size_t>(item.label)].images;
  return out;
}

int loaded_channels(const DatasetSpec& spec) { return spec.format == "idx" ? 1 : spec.channels; }

ImageSet load_dataset(const DatasetSpec& spec) {
  check_spec(spec);
  if (spec.format == "idx" && (spec.root.empty() || spec.labels.empty())) return load_idx(spec);  // names the gap
  Prepared prepared = prepare(spec);
  if (spec.cache_dir.empty()) return prepared.build();

  const uint64_t fp = fingerprint(stamp_sources(prepared.sources));
  const std::string path = cache_path(spec);
  if (std::optional<ImageSet> cached = read_cache(path, fp, prepared.sources.size())) {
    detail::count_hit();
    return std::move(*cached);
  }
  ImageSet set = prepared.build();
  detail::count_build();
  // The set is good even when it cannot be cached (read-only or full disk): say so, go on.
  try {
    write_cache(path, fp, prepared.sources.size(), set);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "protonet: cannot write the dataset cache '%s': %s\n", path.c_str(), e.what());
  }
  return set;
}

}  // namespace protonet
