#include "idx.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>

#include "decode.hpp"

namespace protonet {
namespace {

constexpr uint32_t kImagesMagic = 0x00000803;  // unsigned byte, 3 dimensions
constexpr uint32_t kLabelsMagic = 0x00000801;  // unsigned byte, 1 dimension

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", v);
  return buf;
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw DataError("IDX file '" + path + "': " + what);
}

uint32_t be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

std::vector<uint8_t> read_plain(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) throw DataError("cannot open '" + path + "': " + std::strerror(errno));
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f.get())) > 0) out.insert(out.end(), buf, buf + n);
  if (std::ferror(f.get())) throw DataError("cannot read '" + path + "': " + std::strerror(errno));
  return out;
}

std::vector<uint8_t> read_gzip(const std::string& path) {
  gzFile gz = gzopen(path.c_str(), "rb");
  if (!gz) throw DataError("cannot open '" + path + "': " + std::strerror(errno));
  gzbuffer(gz, 1 << 17);
  std::vector<uint8_t> out;
  std::vector<uint8_t> buf(1 << 20);
  for (;;) {
    const int n = gzread(gz, buf.data(), static_cast<unsigned>(buf.size()));
    if (n < 0) {
      int code = 0;
      const std::string msg = gzerror(gz, &code);
      gzclose(gz);
      throw DataError("gzip file '" + path + "': corrupt or truncated (" + msg + ")");
    }
    if (n == 0) break;
    out.insert(out.end(), buf.data(), buf.data() + n);
  }
  // A stream cut short is only reported once the reader hits its end, as an error state.
  int code = 0;
  const char* msg = gzerror(gz, &code);
  const std::string err = msg ? msg : "";
  gzclose(gz);
  if (code != Z_OK && code != Z_STREAM_END)
    throw DataError("gzip file '" + path + "': corrupt or truncated (" + err + ")");
  return out;
}

// Parses and validates the header; returns the dimension sizes.
std::vector<uint32_t> parse_header(const std::string& path, const std::vector<uint8_t>& data, uint32_t want_magic,
                                   const char* kind) {
  if (data.size() < 4) fail(path, "file is " + std::to_string(data.size()) + " bytes, too short for an IDX header");
  const uint32_t magic = be32(data.data());
  const uint32_t want_dims = want_magic & 0xFF;
  if ((magic >> 16) != 0) fail(path, "bad magic " + hex32(magic) + " (expected " + hex32(want_magic) + " for " + kind + ")");
  if (((magic >> 8) & 0xFF) != 0x08)
    fail(path, "magic " + hex32(magic) + " says data type " + hex32((magic >> 8) & 0xFF) +
                   ", expected 0x08 (unsigned byte) for " + kind);
  if ((magic & 0xFF) != want_dims)
    fail(path, "magic " + hex32(magic) + " says " + std::to_string(magic & 0xFF) + " dimensions, expected " +
                   std::to_string(want_dims) + " for " + kind);
  if (data.size() < 4 + 4 * size_t{want_dims}) fail(path, "truncated header");
  std::vector<uint32_t> dims;
  for (uint32_t i = 0; i < want_dims; ++i) dims.push_back(be32(data.data() + 4 + 4 * i));
  size_t expect = 1;
  for (uint32_t d : dims) {
    if (d != 0 && expect > SIZE_MAX / d) fail(path, "dimensions too large (" + std::to_string(d) + ")");
    expect *= d;
  }
  const size_t header = 4 + 4 * size_t{want_dims};
  if (data.size() - header < expect)
    fail(path, "truncated: header promises " + std::to_string(expect) + " data bytes, file holds " +
                   std::to_string(data.size() - header));
  if (data.size() - header > expect)
    fail(path, "has " + std::to_string(data.size() - header - expect) + " trailing bytes after the data");
  return dims;
}

// Every label value that occurs among the `n` labels, ascending.
std::vector<int32_t> labels_present(const uint8_t* labels, size_t n) {
  bool present[256] = {};
  for (size_t i = 0; i < n; ++i) present[labels[i]] = true;
  std::vector<int32_t> out;
  for (int c = 0; c < 256; ++c)
    if (present[c]) out.push_back(c);
  return out;
}

}  // namespace

std::vector<uint8_t> read_maybe_gzip(const std::string& path) {
  unsigned char magic[2] = {0, 0};
  {
    std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (!f) throw DataError("cannot open '" + path + "': " + std::strerror(errno));
    if (std::fread(magic, 1, 2, f.get()) != 2) magic[0] = magic[1] = 0;
  }
  return magic[0] == 0x1f && magic[1] == 0x8b ? read_gzip(path) : read_plain(path);
}

std::vector<std::string> idx_class_names(const DatasetSpec& spec) {
  std::vector<int32_t> classes = spec.classes;
  if (classes.empty()) {
    if (spec.labels.empty()) throw DataError("IDX file '" + spec.root + "': no labels file given (labels)");
    const std::vector<uint8_t> labels = read_maybe_gzip(spec.labels);
    const std::vector<uint32_t> ldims = parse_header(spec.labels, labels, kLabelsMagic, "labels");
    classes = labels_present(labels.data() + 8, ldims[0]);
  }
  std::vector<std::string> names;
  for (int32_t c : classes) names.push_back(std::to_string(c));
  return names;
}

std::vector<ClassSize> idx_class_sizes(const DatasetSpec& spec) {
  if (spec.labels.empty()) throw DataError("IDX file '" + spec.root + "': no labels file given (labels)");
  const std::vector<uint8_t> labels = read_maybe_gzip(spec.labels);
  const std::vector<uint32_t> ldims = parse_header(spec.labels, labels, kLabelsMagic, "labels");
  int64_t count[256] = {};
  for (size_t i = 0; i < ldims[0]; ++i) ++count[labels[8 + i]];
  const std::vector<int32_t> classes = spec.classes.empty() ? labels_present(labels.data() + 8, ldims[0]) : spec.classes;
  std::vector<ClassSize> out;
  for (int32_t c : classes)
    if (c >= 0 && c < 256 && count[c] > 0) out.push_back({std::to_string(c), count[c]});
  return out;
}

ImageSet load_idx(const DatasetSpec& spec) {
  if (spec.root.empty()) throw DataError("IDX dataset: no images file given (root)");
  if (spec.labels.empty()) throw DataError("IDX file '" + spec.root + "': no labels file given (labels)");
  if (spec.channels != 1)
    fail(spec.root, "IDX images are grayscale, but " + std::to_string(spec.channels) +
                        " channels were asked for (channels must be 1)");

  const std::vector<uint8_t> images = read_maybe_gzip(spec.root);
  const std::vector<uint32_t> idims = parse_header(spec.root, images, kImagesMagic, "images");
  const std::vector<uint8_t> labels = read_maybe_gzip(spec.labels);
  const std::vector<uint32_t> ldims = parse_header(spec.labels, labels, kLabelsMagic, "labels");
  const size_t n = idims[0], rows = idims[1], cols = idims[2];
  if (rows == 0 || cols == 0) fail(spec.root, "images are " + std::to_string(rows) + " x " + std::to_string(cols));
  if (ldims[0] != n)
    fail(spec.labels, "holds " + std::to_string(ldims[0]) + " labels, but the images file '" + spec.root +
                          "' holds " + std::to_string(n) + " images");
  const uint8_t* img = images.data() + 16;
  const uint8_t* lab = labels.data() + 8;

  // Class selection: the requested labels in the order given, else every label present.
  std::vector<int32_t> classes = spec.classes;
  if (classes.empty()) classes = labels_present(lab, n);
  int remap[256];
  std::fill(std::begin(remap), std::end(remap), -1);
  for (size_t k = 0; k < classes.size(); ++k) {
    const int32_t c = classes[k];
    if (c < 0 || c > 255) fail(spec.labels, "class " + std::to_string(c) + " cannot occur (labels are 0..255)");
    if (remap[c] >= 0) fail(spec.labels, "class " + std::to_string(c) + " is asked for twice");
    remap[c] = static_cast<int>(k);
  }

  ImageSet set;
  set.channels = 1;
  set.height = spec.height;
  set.width = spec.width;
  for (int32_t c : classes) set.class_names.push_back(std::to_string(c));
  std::vector<size_t> count(classes.size(), 0);
  size_t kept = 0;
  for (size_t i = 0; i < n; ++i)
    if (remap[lab[i]] >= 0) ++kept, ++count[remap[lab[i]]];
  for (size_t k = 0; k < classes.size(); ++k)
    if (count[k] == 0) fail(spec.labels, "class " + std::to_string(classes[k]) + " has no images");

  const bool same_size = rows == static_cast<size_t>(spec.height) && cols == static_cast<size_t>(spec.width);
  set.labels.reserve(kept);
  set.pixels.reserve(kept * set.image_bytes());
  for (size_t i = 0; i < n; ++i) {
    const int k = remap[lab[i]];
    if (k < 0) continue;
    set.labels.push_back(k);
    const uint8_t* src = img + i * rows * cols;
    if (same_size) {
      set.pixels.insert(set.pixels.end(), src, src + rows * cols);
    } else {
      RawImage raw;
      raw.width = static_cast<int>(cols);
      raw.height = static_cast<int>(rows);
      raw.channels = 1;
      raw.data.assign(src, src + rows * cols);
      const RawImage r = resize_image(raw, spec.height, spec.width, spec.root);
      set.pixels.insert(set.pixels.end(), r.data.begin(), r.data.end());
    }
  }
  return set;
}

}  // namespace protonet
