// The data every ProtoNet loader produces: a labelled set of equally sized 8-bit images.
// Loaders (idx, omniglot, miniimagenet, folder) are free of LibTorch; the algorithm turns
// the pixels into tensors when it assembles episodes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <mlh/plugin.hpp>

namespace protonet {

// Bad or unreadable data; the message names the file (and the field or entry). The SDK's
// mlh::DataError: a run refused for it exits 2 and leaves no run folder behind.
using DataError = mlh::DataError;

// A class of a set and how many images it has.
struct ClassSize {
  std::string name;
  int64_t images = 0;
};

struct ImageSet {
  int channels = 1, height = 0, width = 0;
  std::vector<uint8_t> pixels;           // N x C x H x W, row-major
  std::vector<int32_t> labels;           // N entries, each an index into class_names
  std::vector<std::string> class_names;  // e.g. "Greek/character01/rot090", "5", "n01532829"

  size_t size() const { return labels.size(); }
  size_t image_bytes() const { return static_cast<size_t>(channels) * height * width; }
  const uint8_t* image(size_t i) const { return pixels.data() + i * image_bytes(); }
};

// Which data to load, from the algorithm's config (its table holds the defaults: a spec made
// by hand sets the image size and channels).
struct DatasetSpec {
  std::string format;            // "idx", "omniglot", "miniimagenet" or "folder"
  std::string root;              // the folder (omniglot, miniimagenet, folder) or the IDX images file
  std::string labels;            // idx: the labels file
  std::string split;             // omniglot / miniimagenet: "train", "val", "test" or "trainval"
  std::string splits;            // omniglot / miniimagenet: where the split lists come from (splits.hpp)
  std::string split_file;        // omniglot: this one split file instead (one "<Alphabet>/<characterNN>/rot000" per line)
  std::vector<int32_t> classes;  // idx: the labels to keep (empty: all)
  int height{}, width{};         // images are resized to this
  int channels{};                // 1: grayscale, 3: RGB
  bool invert{};                 // omniglot: white strokes on black, as the reference code does
  bool rotations{};              // omniglot: rotations by 90/180/270 as extra classes
  std::string cache_dir;         // decoded sets are cached here ("": no cache)
};

// Loads (or reads from the cache) the set `spec` describes. Throws DataError.
ImageSet load_dataset(const DatasetSpec& spec);
// The channels the images of load_dataset(spec) have, known before loading: IDX files are
// grayscale whatever spec.channels says; the other formats convert to spec.channels.
int loaded_channels(const DatasetSpec& spec);

// The class names load_dataset would give, from the file lists alone (no image is decoded).
// Throws DataError.
std::vector<std::string> dataset_class_names(const DatasetSpec& spec);

// The classes load_dataset would give and how many images each has, from the file lists (an
// IDX set: its labels file) alone. Throws DataError.
std::vector<ClassSize> dataset_class_sizes(const DatasetSpec& spec);

}  // namespace protonet
