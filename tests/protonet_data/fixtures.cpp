#include "fixtures.hpp"

#include <stb/stb_image_write.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>

namespace fs = std::filesystem;

namespace pdt {

static void make_parent(const std::string& path) { fs::create_directories(fs::path(path).parent_path()); }

void write_png(const std::string& path, int w, int h, int c, const std::vector<uint8_t>& px) {
  make_parent(path);
  if (!stbi_write_png(path.c_str(), w, h, c, px.data(), w * c)) throw std::runtime_error("stbi_write_png " + path);
}
void write_jpg(const std::string& path, int w, int h, int c, const std::vector<uint8_t>& px, int quality) {
  make_parent(path);
  if (!stbi_write_jpg(path.c_str(), w, h, c, px.data(), quality)) throw std::runtime_error("stbi_write_jpg " + path);
}
void write_text(const std::string& path, const std::string& text) {
  make_parent(path);
  std::ofstream(path, std::ios::binary) << text;
}
void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes, bool gzip) {
  make_parent(path);
  if (!gzip) {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    return;
  }
  gzFile gz = gzopen(path.c_str(), "wb");
  if (!gz) throw std::runtime_error("gzopen " + path);
  gzwrite(gz, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(gz);
}

uint8_t pattern(int seed, int r, int c, int ch) {
  return static_cast<uint8_t>((seed * 37 + r * 11 + c * 3 + ch * 50 + r * c) & 0xFF);
}
std::vector<uint8_t> pattern_image(int seed, int w, int h, int c) {
  std::vector<uint8_t> px(static_cast<size_t>(w) * h * c);
  for (int r = 0; r < h; ++r)
    for (int col = 0; col < w; ++col)
      for (int ch = 0; ch < c; ++ch) px[(static_cast<size_t>(r) * w + col) * c + ch] = pattern(seed, r, col, ch);
  return px;
}

static void be32(std::vector<uint8_t>& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
}
std::vector<uint8_t> idx_images(const std::vector<std::vector<uint8_t>>& images, int rows, int cols) {
  std::vector<uint8_t> out;
  be32(out, 0x00000803);
  be32(out, static_cast<uint32_t>(images.size()));
  be32(out, rows);
  be32(out, cols);
  for (const auto& im : images) out.insert(out.end(), im.begin(), im.end());
  return out;
}
std::vector<uint8_t> idx_labels(const std::vector<uint8_t>& labels) {
  std::vector<uint8_t> out;
  be32(out, 0x00000801);
  be32(out, static_cast<uint32_t>(labels.size()));
  out.insert(out.end(), labels.begin(), labels.end());
  return out;
}

}  // namespace pdt
