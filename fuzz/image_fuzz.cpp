// Image files (PNG / JPEG through stb) as our loader reads them: decode with 1 and 3
// channels, then resize (shrink and grow) and rotate, as decode_plan does.
#include <cstdint>
#include <string>

#include <stb/stb_image.h>

#include "data/decode.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A few hundred bytes can declare a 65000 x 250 image: valid, and decoded correctly, but
  // taking seconds under the sanitizers. Such inputs test speed, not parsing: skip them.
  // (stb reads the header only after the loader's own checks, as decode_image_memory does.)
  try {
    protonet::check_image_bytes(data, size, "fuzz.png");
  } catch (const protonet::DataError&) {
    return 0;
  }
  int w = 0, h = 0, comp = 0;
  if (stbi_info_from_memory(data, static_cast<int>(size), &w, &h, &comp) &&
      static_cast<int64_t>(w) * h > (1 << 20))
    return 0;
  for (int channels : {1, 3}) {
    try {
      const protonet::RawImage img = protonet::decode_image_memory(data, size, channels, "fuzz.png");
      const protonet::RawImage small = protonet::resize_image(img, 5, 7, "fuzz.png");
      (void)protonet::rotate_image(small, 90);
      (void)protonet::rotate_image(small, 270);
      std::vector<uint8_t> chw;
      protonet::append_chw(small, chw);
      if (static_cast<int64_t>(img.width) * img.height <= 4096)
        (void)protonet::resize_image(img, img.height * 2 + 1, img.width + 3, "fuzz.png");
    } catch (const protonet::DataError&) {
    }
  }
  return 0;
}
