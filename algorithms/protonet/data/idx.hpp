// IDX files (the MNIST / Fashion-MNIST format): big-endian header, then uint8 data.
// Images: magic 0x00000803, N x rows x cols. Labels: magic 0x00000801, N.
// Plain or gzip'd files (detected by the gzip magic bytes, not by the name).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "image_set.hpp"

namespace protonet {

// The whole (decompressed) content of `path`; gzip is recognised by its magic 1f 8b.
std::vector<uint8_t> read_maybe_gzip(const std::string& path);

// Loads spec.root (images) and spec.labels (labels): keeps spec.classes (all if empty, in
// ascending label order), remaps labels to 0..k-1 in the order given, names the classes by
// their label numbers, resizes to spec.height x spec.width. spec.channels must be 1.
ImageSet load_idx(const DatasetSpec& spec);

// The class names load_idx would give (spec.classes, else every label in spec.labels), without
// reading the images.
std::vector<std::string> idx_class_names(const DatasetSpec& spec);
// Images per class of the labels file (the classes spec.classes keeps, else every label present).
std::vector<ClassSize> idx_class_sizes(const DatasetSpec& spec);

}  // namespace protonet
