#include "decode.hpp"

#include <stb/stb_image.h>
#include <stb/stb_image_resize.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

namespace protonet {
namespace {

std::vector<uint8_t> read_file(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) throw DataError("cannot open image '" + path + "': " + std::strerror(errno));
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f.get())) > 0) out.insert(out.end(), buf, buf + n);
  if (std::ferror(f.get())) throw DataError("cannot read image '" + path + "': " + std::strerror(errno));
  return out;
}

bool is_png(const uint8_t* p, size_t n) {
  static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  return n >= 8 && std::memcmp(p, sig, 8) == 0;
}
bool is_jpeg(const uint8_t* p, size_t n) { return n >= 3 && p[0] == 0xFF && p[1] == 0xD8 && p[2] == 0xFF; }

// stb_image 2.27 (Debian 12's libstb) trusts the 16 code counts of a JPEG Huffman table (DHT)
// and writes past its 257-entry size array when they add up to more than 256 (fixed in stb
// 2.28). Walks the JPEG's segments, skipping entropy-coded data, and returns the first DHT
// table that does so, as "table <class>/<id>: <n> codes"; "" when there is none.
std::string oversized_huffman_table(const uint8_t* p, size_t n) {
  size_t i = 2;  // after SOI
  while (i + 1 < n) {
    if (p[i] != 0xFF) {  // entropy-coded data after SOS: find the next marker
      ++i;
      continue;
    }
    const uint8_t marker = p[i + 1];
    if (marker == 0xFF) {  // fill byte
      ++i;
      continue;
    }
    if (marker == 0x00 || (marker >= 0xD0 && marker <= 0xD7) || marker == 0x01 || marker == 0xD8) {
      i += 2;  // stuffed 0xFF, restart markers, TEM, SOI: no length
      continue;
    }
    if (marker == 0xD9) break;  // EOI
    if (i + 3 >= n) break;
    const size_t length = (size_t{p[i + 2]} << 8) | p[i + 3];  // counts itself, not the marker
    if (length < 2) break;
    if (marker == 0xC4) {
      // As stb reads it: table after table while the segment's length lasts, from the file
      // whatever the length says, bytes past the end reading as 0.
      auto byte = [&](size_t k) -> size_t { return k < n ? p[k] : 0; };
      long left = static_cast<long>(length) - 2;
      for (size_t t = i + 4; left > 0;) {
        if ((byte(t) >> 4) > 1 || (byte(t) & 15) > 3) break;  // stb rejects the table itself
        size_t codes = 0;
        for (size_t k = 1; k <= 16; ++k) codes += byte(t + k);
        if (codes > 256)
          return "table " + std::to_string(byte(t) >> 4) + "/" + std::to_string(byte(t) & 15) + ": " +
                 std::to_string(codes) + " codes";
        left -= static_cast<long>(17 + codes);
        t += 17 + codes;
      }
    }
    i += 2 + length;
  }
  return "";
}

}  // namespace

void check_image_bytes(const uint8_t* bytes, size_t size, const std::string& name) {
  // stb reads more formats (BMP, GIF, ...); the datasets are PNG or JPEG, and naming what the
  // file is not gives a clearer error than stb's reason for an arbitrary file.
  if (!is_png(bytes, size) && !is_jpeg(bytes, size))
    throw DataError("image '" + name + "': not a PNG or JPEG file (unknown signature)");
  if (size > static_cast<size_t>(INT32_MAX)) throw DataError("image '" + name + "': file too large");
  if (is_jpeg(bytes, size))
    if (const std::string bad = oversized_huffman_table(bytes, size); !bad.empty())
      throw DataError("image '" + name + "': corrupt JPEG: Huffman table (DHT) " + bad + ", at most 256 allowed");
}

RawImage decode_image_memory(const uint8_t* bytes, size_t size, int channels, const std::string& name) {
  if (channels != 1 && channels != 3)
    throw DataError("image '" + name + "': " + std::to_string(channels) + " channels asked for (1 or 3 supported)");
  check_image_bytes(bytes, size, name);
  int w = 0, h = 0, comp = 0;
  stbi_uc* px = stbi_load_from_memory(bytes, static_cast<int>(size), &w, &h, &comp, channels);
  if (!px) {
    const char* why = stbi_failure_reason();
    throw DataError("image '" + name + "': cannot decode: " + (why ? why : "unknown reason"));
  }
  RawImage img;
  img.width = w;
  img.height = h;
  img.channels = channels;
  img.data.assign(px, px + static_cast<size_t>(w) * h * channels);
  stbi_image_free(px);
  return img;
}

RawImage decode_image_file(const std::string& path, int channels) {
  const std::vector<uint8_t> bytes = read_file(path);
  return decode_image_memory(bytes.data(), bytes.size(), channels, path);
}

bool read_image_header(const std::string& path, RawImage& header) {
  header = RawImage{};
  return stbi_info(path.c_str(), &header.width, &header.height, &header.channels) == 1;
}

RawImage resize_image(const RawImage& in, int height, int width, const std::string& name) {
  if (height <= 0 || width <= 0)
    throw DataError("image '" + name + "': cannot resize to " + std::to_string(height) + " x " + std::to_string(width));
  if (in.height == height && in.width == width) return in;
  RawImage out;
  out.width = width;
  out.height = height;
  out.channels = in.channels;
  out.data.resize(static_cast<size_t>(width) * height * in.channels);
  // Per axis: a box (area average, i.e. antialiased) filter when shrinking, the triangle
  // (bilinear) filter when enlarging; together close to PIL's antialiased BILINEAR that the
  // Omniglot reference code resizes with. Debian's stb_image_resize (2022) trips an assertion
  // in stbir__normalize_downsample_coefficients for the triangle filter on most shrink
  // ratios (100 -> 84, 7 -> 5, ...), so the triangle filter is only used to enlarge.
  const stbir_filter fx = width < in.width ? STBIR_FILTER_BOX : STBIR_FILTER_TRIANGLE;
  const stbir_filter fy = height < in.height ? STBIR_FILTER_BOX : STBIR_FILTER_TRIANGLE;
  const int ok = stbir_resize(in.data.data(), in.width, in.height, 0, out.data.data(), width, height, 0,
                              STBIR_TYPE_UINT8, in.channels, STBIR_ALPHA_CHANNEL_NONE, 0, STBIR_EDGE_CLAMP,
                              STBIR_EDGE_CLAMP, fx, fy, STBIR_COLORSPACE_LINEAR, nullptr);
  if (!ok) throw DataError("image '" + name + "': resizing failed");
  return out;
}

RawImage rotate_image(const RawImage& in, int degrees) {
  degrees = ((degrees % 360) + 360) % 360;
  if (degrees == 0) return in;
  const int H = in.height, W = in.width, C = in.channels;
  RawImage out;
  out.channels = C;
  const bool swap = degrees == 90 || degrees == 270;
  out.height = swap ? W : H;
  out.width = swap ? H : W;
  out.data.resize(in.data.size());
  for (int r = 0; r < out.height; ++r) {
    for (int c = 0; c < out.width; ++c) {
      int sr = 0, sc = 0;
      if (degrees == 90) {  // counter-clockwise: the right column becomes the top row
        sr = c;
        sc = W - 1 - r;
      } else if (degrees == 180) {
        sr = H - 1 - r;
        sc = W - 1 - c;
      } else if (degrees == 270) {
        sr = H - 1 - c;
        sc = r;
      } else {
        throw DataError("rotation by " + std::to_string(degrees) + " degrees is not supported");
      }
      std::memcpy(&out.data[(static_cast<size_t>(r) * out.width + c) * C], &in.data[(static_cast<size_t>(sr) * W + sc) * C],
                  C);
    }
  }
  return out;
}

void append_chw(const RawImage& img, std::vector<uint8_t>& out) {
  const size_t plane = static_cast<size_t>(img.width) * img.height;
  if (img.channels == 1) {
    out.insert(out.end(), img.data.begin(), img.data.end());
    return;
  }
  const size_t base = out.size();
  out.resize(base + plane * img.channels);
  for (int ch = 0; ch < img.channels; ++ch)
    for (size_t i = 0; i < plane; ++i) out[base + ch * plane + i] = img.data[i * img.channels + ch];
}

bool has_image_extension(const std::string& filename) {
  const size_t dot = filename.rfind('.');
  if (dot == std::string::npos) return false;
  std::string ext = filename.substr(dot + 1);
  for (char& ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return ext == "png" || ext == "jpg" || ext == "jpeg";
}

ImageSet decode_plan(const FilePlan& plan, const DecodeOptions& options) {
  ImageSet set;
  set.channels = options.channels;
  set.height = options.height;
  set.width = options.width;
  set.class_names = plan.class_names;
  const size_t n = plan.items.size();
  const size_t bytes = set.image_bytes();
  set.labels.resize(n);
  set.pixels.resize(n * bytes);

  // Decoding dominates the load time and the images are independent, so the items are
  // shared out over the cores; each writes its own slot, and the first error wins.
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  size_t error_index = SIZE_MAX;
  std::mutex error_mutex;
  auto work = [&] {
    std::vector<uint8_t> chw;
    for (;;) {
      const size_t i = next.fetch_add(1);
      if (i >= n || failed.load()) return;
      const ImageItem& item = plan.items[i];
      try {
        RawImage img = decode_image_file(item.path, options.channels);
        const int rot = ((item.rotation % 360) + 360) % 360;
        if (rot % 180 != 0 && options.height != options.width) {
          // A quarter turn swaps height and width: turn first, then resize to the spec size.
          img = resize_image(rotate_image(img, rot), options.height, options.width, item.path);
        } else {
          img = rotate_image(resize_image(img, options.height, options.width, item.path), rot);
        }
        chw.clear();
        append_chw(img, chw);
        uint8_t* dst = set.pixels.data() + i * bytes;
        if (options.invert)
          for (size_t k = 0; k < bytes; ++k) dst[k] = static_cast<uint8_t>(255 - chw[k]);
        else
          std::memcpy(dst, chw.data(), bytes);
        set.labels[i] = item.label;
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        // Report the earliest failing item so the message does not depend on scheduling.
        if (i < error_index) {
          error_index = i;
          error = std::current_exception();
        }
        failed.store(true);
      }
    }
  };
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const size_t nthreads = std::min<size_t>(hw, std::max<size_t>(1, n / 64));
  std::vector<std::thread> threads;
  for (size_t t = 1; t < nthreads; ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
  return set;
}

}  // namespace protonet
