// Fixture writers for the data loader tests (in tests/common's TempDir folders): PNG / JPEG files (stb_image_write),
// IDX files (plain and gzip'd), text files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/image_set.hpp"
#include "temp_dir.hpp"

namespace pdt {

// Interleaved H x W x C pixels; parent folders are created.
void write_png(const std::string& path, int w, int h, int c, const std::vector<uint8_t>& px);
void write_jpg(const std::string& path, int w, int h, int c, const std::vector<uint8_t>& px, int quality = 95);
void write_text(const std::string& path, const std::string& text);
void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes, bool gzip = false);

// An asymmetric test pattern: pixel (r, c) of image `seed` (channel ch).
uint8_t pattern(int seed, int r, int c, int ch = 0);
std::vector<uint8_t> pattern_image(int seed, int w, int h, int c);

// IDX byte streams.
std::vector<uint8_t> idx_images(const std::vector<std::vector<uint8_t>>& images, int rows, int cols);
std::vector<uint8_t> idx_labels(const std::vector<uint8_t>& labels);

}  // namespace pdt

#include <functional>

namespace pdt {

// The message of the protonet::DataError `f` throws ("" when it throws none).
inline std::string data_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const protonet::DataError& e) {
    return e.what();
  }
  return "";
}

}  // namespace pdt

// Expects `stmt` to throw a DataError whose message holds every one of the strings.
#define EXPECT_DATA_ERROR(stmt, ...)                                                     \
  do {                                                                                   \
    const std::string _msg = pdt::data_error([&] { (void)(stmt); });                     \
    EXPECT_FALSE(_msg.empty()) << #stmt " threw no DataError";                           \
    for (const std::string& _part : std::vector<std::string>{__VA_ARGS__})               \
      EXPECT_NE(_msg.find(_part), std::string::npos) << "'" << _part << "' not in: " << _msg; \
  } while (0)
