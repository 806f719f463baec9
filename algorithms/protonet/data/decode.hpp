// Image decoding (PNG / JPEG through stb_image), resizing (stb_image_resize), rotation,
// and the decoding of a list of image files into an ImageSet, shared by the folder,
// Omniglot and miniImageNet loaders.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "image_set.hpp"

namespace protonet {

// An interleaved image (H x W x C), the layout stb works in.
struct RawImage {
  int width = 0, height = 0, channels = 0;
  std::vector<uint8_t> data;
};

// The checks made before stb sees the bytes: a PNG or JPEG signature, and no JPEG Huffman
// table that stb 2.27 would overflow on. Throws DataError naming `name`.
void check_image_bytes(const uint8_t* bytes, size_t size, const std::string& name);

// Decodes a PNG or JPEG held in memory with `channels` channels (1 or 3; stb converts).
// `name` is only used in error messages.
RawImage decode_image_memory(const uint8_t* bytes, size_t size, int channels, const std::string& name);

// Reads and decodes the file at `path`.
RawImage decode_image_file(const std::string& path, int channels);

// The size and channels an image file is stored at (1 gray, 2 gray + alpha, 3 RGB, 4 RGBA),
// from its header alone, without decoding: data.empty(). False where the header is not one
// that decodes (decoding then names the fault).
bool read_image_header(const std::string& path, RawImage& header);

// Resizes: area averaging (antialiased) along an axis that shrinks, bilinear along one that
// grows; a plain copy when the size already matches. `name` is used in error messages.
RawImage resize_image(const RawImage& in, int height, int width, const std::string& name);

// Rotates counter-clockwise by `degrees` (0, 90, 180, 270): torch.rot90(x, k, dims=[H, W])
// semantics, i.e. for 90: out[r][c] = in[c][W-1-r].
RawImage rotate_image(const RawImage& in, int degrees);

// H x W x C -> C x H x W, appended to `out`.
void append_chw(const RawImage& img, std::vector<uint8_t>& out);

// One image file of a set to be decoded.
struct ImageItem {
  std::string path;
  int32_t label = 0;
  int rotation = 0;  // degrees counter-clockwise, applied after resizing
};

// What a file-based loader found before decoding anything: the classes, the images, and all
// files it reads (images plus CSV / split files), which the cache fingerprints.
struct FilePlan {
  std::vector<std::string> class_names;
  std::vector<ImageItem> items;
  std::vector<std::string> sources;
  std::vector<std::string> skipped;  // folder: files of the class folders that are not images
};

struct DecodeOptions {
  int channels = 1, height = 28, width = 28;
  bool invert = false;  // 255 - pixel after resizing and rotating
};

// Decodes every item (in parallel over the machine's cores) into one ImageSet, in item order.
ImageSet decode_plan(const FilePlan& plan, const DecodeOptions& options);

// True for *.png, *.jpg, *.jpeg in any case.
bool has_image_extension(const std::string& filename);

}  // namespace protonet
