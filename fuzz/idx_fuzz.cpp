// IDX files (plain or gzip'd) through load_idx. The input is the images file, then the
// 8 bytes "LABELS::", then the labels file; without the separator both files get the input.
// Sizes 8 x 8 make the loader resize (the seeds hold other sizes).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "data/idx.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const char sep[] = "LABELS::";
  const uint8_t* end = data + size;
  const uint8_t* cut = std::search(data, end, sep, sep + 8);
  const std::string images = mlhfuzz::temp_dir() + "/images-idx3-ubyte";
  const std::string labels = mlhfuzz::temp_dir() + "/labels-idx1-ubyte";
  if (cut == end) {
    mlhfuzz::write_file(images, data, size);
    mlhfuzz::write_file(labels, data, size);
  } else {
    mlhfuzz::write_file(images, data, static_cast<size_t>(cut - data));
    mlhfuzz::write_file(labels, cut + 8, static_cast<size_t>(end - cut - 8));
  }
  protonet::DatasetSpec spec;
  spec.height = spec.width = 28;
  spec.channels = 1;
  spec.format = "idx";
  spec.root = images;
  spec.labels = labels;
  spec.height = 8;
  spec.width = 8;
  try {
    (void)protonet::load_idx(spec);
    spec.classes = {1, 0};
    spec.height = spec.width = 3;
    (void)protonet::load_idx(spec);
  } catch (const protonet::DataError&) {
  }
  return 0;
}
