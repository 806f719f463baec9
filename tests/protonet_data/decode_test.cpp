#include <gtest/gtest.h>

#include "data/decode.hpp"
#include "fixtures.hpp"

using namespace protonet;

TEST(Decode, PngIsExact) {
  TempDir d;
  const auto px = pdt::pattern_image(3, 5, 4, 3);
  pdt::write_png(d / "a.png", 5, 4, 3, px);
  const RawImage img = decode_image_file(d / "a.png", 3);
  EXPECT_EQ(img.width, 5);
  EXPECT_EQ(img.height, 4);
  EXPECT_EQ(img.data, px);
}

TEST(Decode, JpegIsClose) {
  TempDir d;
  std::vector<uint8_t> px(16 * 16, 0);
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) px[r * 16 + c] = static_cast<uint8_t>(r * 8 + c * 4);  // smooth
  pdt::write_jpg(d / "a.jpg", 16, 16, 1, px, 100);
  const RawImage img = decode_image_file(d / "a.jpg", 1);
  ASSERT_EQ(img.data.size(), px.size());
  for (size_t i = 0; i < px.size(); ++i) EXPECT_NEAR(img.data[i], px[i], 6) << i;
}

TEST(Decode, ConvertsChannels) {
  TempDir d;
  pdt::write_png(d / "g.png", 2, 1, 1, {10, 200});
  const RawImage rgb = decode_image_file(d / "g.png", 3);
  EXPECT_EQ(rgb.data, (std::vector<uint8_t>{10, 10, 10, 200, 200, 200}));
}

TEST(Decode, RotationMatchesTorchRot90) {
  // torch.rot90(torch.tensor([[1,2,3],[4,5,6]]), 1, [0,1]) == [[3,6],[2,5],[1,4]]
  RawImage in{3, 2, 1, {1, 2, 3, 4, 5, 6}};
  const RawImage r90 = rotate_image(in, 90);
  EXPECT_EQ(r90.height, 3);
  EXPECT_EQ(r90.width, 2);
  EXPECT_EQ(r90.data, (std::vector<uint8_t>{3, 6, 2, 5, 1, 4}));
  // k=2: [[6,5,4],[3,2,1]]; k=3: [[4,1],[5,2],[6,3]]
  EXPECT_EQ(rotate_image(in, 180).data, (std::vector<uint8_t>{6, 5, 4, 3, 2, 1}));
  EXPECT_EQ(rotate_image(in, 270).data, (std::vector<uint8_t>{4, 1, 5, 2, 6, 3}));
  EXPECT_EQ(rotate_image(rotate_image(in, 90), 270).data, in.data);
}

TEST(Decode, ChwLayout) {
  RawImage in{2, 1, 3, {1, 2, 3, 4, 5, 6}};
  std::vector<uint8_t> out;
  append_chw(in, out);
  EXPECT_EQ(out, (std::vector<uint8_t>{1, 4, 2, 5, 3, 6}));
}

TEST(Decode, ErrorsNameTheFile) {
  TempDir d;
  pdt::write_text(d / "x.png", "this is not a png");
  EXPECT_DATA_ERROR(decode_image_file(d / "x.png", 1), d / "x.png", "not a PNG or JPEG");
  // A PNG signature with garbage after it reaches stb, whose reason is reported.
  std::vector<uint8_t> bad = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 1, 2, 3, 4, 5, 6, 7, 8};
  pdt::write_bytes(d / "y.png", bad);
  EXPECT_DATA_ERROR(decode_image_file(d / "y.png", 1), d / "y.png", "cannot decode");
  EXPECT_DATA_ERROR(decode_image_file(d / "none.png", 1), d / "none.png");
}

// Found by fuzzing (fuzz/regressions/image/): Debian's stb_image 2.27 writes past its Huffman
// size table when a JPEG's DHT counts add up to more than 256; the loader refuses such files.
TEST(Decode, RefusesJpegHuffmanTableWithMoreThan256Codes) {
  std::vector<uint8_t> jpeg = {0xFF, 0xD8, 0xFF, 0xC4, 0x00, 0x13, 0x10};  // SOI, DHT: AC table 0
  for (int len = 1; len <= 16; ++len) jpeg.push_back(len == 8 ? 200 : len == 9 ? 100 : 0);  // 300 codes
  try {
    decode_image_memory(jpeg.data(), jpeg.size(), 1, "evil.jpg");
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("image 'evil.jpg': corrupt JPEG: Huffman table (DHT) table 1/0: 300 codes"),
              std::string::npos)
        << e.what();
  }
  // Counts cut off by the end of the file read as 0, as stb reads them: still refused.
  jpeg.resize(7 + 9);
  EXPECT_THROW(decode_image_memory(jpeg.data(), jpeg.size(), 1, "short.jpg"), DataError);
}

TEST(Decode, ExtensionsAreCaseInsensitive) {
  EXPECT_TRUE(has_image_extension("a.PNG"));
  EXPECT_TRUE(has_image_extension("a.JpEg"));
  EXPECT_TRUE(has_image_extension("a.jpg"));
  EXPECT_FALSE(has_image_extension("a.txt"));
  EXPECT_FALSE(has_image_extension("png"));
}

TEST(Decode, ResizeShrinksAndGrowsAtAwkwardRatios) {
  // Debian's stb triangle filter asserts on shrinking 100 -> 84 or 7 -> 5; these must work.
  for (auto [from, to] : {std::pair{100, 84}, {7, 5}, {105, 28}, {28, 84}, {5, 7}}) {
    RawImage in{from, from, 3, std::vector<uint8_t>(static_cast<size_t>(from) * from * 3, 77)};
    const RawImage out = resize_image(in, to, to, "test");
    ASSERT_EQ(out.data.size(), static_cast<size_t>(to) * to * 3);
    for (uint8_t p : out.data) ASSERT_NEAR(p, 77, 1) << from << " -> " << to;
  }
  RawImage wide{10, 4, 1, std::vector<uint8_t>(40, 9)};
  EXPECT_EQ(resize_image(wide, 8, 5, "test").data, std::vector<uint8_t>(40, 9));  // one axis each way
}
