#include <gtest/gtest.h>

#include <fstream>

#include "data/idx.hpp"
#include "fixtures.hpp"

using namespace protonet;

namespace {

// 6 images 4x3, labels 0..2 repeating; image i is filled with pattern(i).
struct IdxFixture {
  TempDir dir;
  std::vector<std::vector<uint8_t>> images;
  std::vector<uint8_t> labels{0, 1, 2, 0, 1, 2};
  IdxFixture() {
    for (int i = 0; i < 6; ++i) images.push_back(pdt::pattern_image(i, 3, 4, 1));
  }
  DatasetSpec write(bool gzip) {
    pdt::write_bytes(dir / "img", pdt::idx_images(images, 4, 3), gzip);
    pdt::write_bytes(dir / "lab", pdt::idx_labels(labels), gzip);
    DatasetSpec s;
    s.height = s.width = 28;
    s.channels = 1;
    s.format = "idx";
    s.root = dir / "img";
    s.labels = dir / "lab";
    s.height = 4;
    s.width = 3;
    return s;
  }
};

}  // namespace

TEST(Idx, PlainAndGzipLoadTheSame) {
  for (bool gz : {false, true}) {
    IdxFixture f;
    const ImageSet set = load_dataset(f.write(gz));
    ASSERT_EQ(set.size(), 6u);
    EXPECT_EQ(set.channels, 1);
    EXPECT_EQ(set.height, 4);
    EXPECT_EQ(set.width, 3);
    EXPECT_EQ(set.class_names, (std::vector<std::string>{"0", "1", "2"}));
    EXPECT_EQ(set.labels, (std::vector<int32_t>{0, 1, 2, 0, 1, 2}));
    for (size_t i = 0; i < 6; ++i)
      EXPECT_EQ(std::vector<uint8_t>(set.image(i), set.image(i) + 12), f.images[i]) << "image " << i << " gz " << gz;
  }
}

TEST(Idx, GzipIsDetectedByContentNotName) {
  IdxFixture f;
  DatasetSpec s = f.write(true);  // names have no .gz
  EXPECT_EQ(load_dataset(s).size(), 6u);
  std::vector<uint8_t> raw = read_maybe_gzip(s.root);
  EXPECT_EQ(raw, pdt::idx_images(f.images, 4, 3));
}

TEST(Idx, ClassFilterKeepsOrderGivenAndRemaps) {
  IdxFixture f;
  DatasetSpec s = f.write(false);
  s.classes = {2, 0};
  const ImageSet set = load_dataset(s);
  EXPECT_EQ(set.class_names, (std::vector<std::string>{"2", "0"}));
  ASSERT_EQ(set.size(), 4u);
  EXPECT_EQ(set.labels, (std::vector<int32_t>{1, 0, 1, 0}));  // images 0, 2, 3, 5
  EXPECT_EQ(std::vector<uint8_t>(set.image(1), set.image(1) + 12), f.images[2]);
  EXPECT_EQ(std::vector<uint8_t>(set.image(3), set.image(3) + 12), f.images[5]);
}

TEST(Idx, ResizesToTheSpecSize) {
  IdxFixture f;
  f.images.assign(6, std::vector<uint8_t>(12, 200));
  DatasetSpec s = f.write(false);
  s.height = 8;
  s.width = 6;
  const ImageSet set = load_dataset(s);
  EXPECT_EQ(set.height, 8);
  EXPECT_EQ(set.width, 6);
  ASSERT_EQ(set.pixels.size(), 6u * 48);
  for (uint8_t p : set.pixels) EXPECT_NEAR(p, 200, 1);
}

TEST(Idx, RejectsBadMagic) {
  IdxFixture f;
  DatasetSpec s = f.write(false);
  auto bytes = pdt::idx_images(f.images, 4, 3);
  bytes[3] = 0x04;
  pdt::write_bytes(s.root, bytes);
  EXPECT_DATA_ERROR(load_dataset(s), s.root, "magic 0x00000804 says 4 dimensions, expected 3 for images");
  bytes[3] = 0x03;
  bytes[2] = 0x0D;  // float data
  pdt::write_bytes(s.root, bytes);
  EXPECT_DATA_ERROR(load_dataset(s), s.root, "data type");
  pdt::write_bytes(s.root, pdt::idx_images(f.images, 4, 3));
  pdt::write_bytes(s.labels, pdt::idx_images(f.images, 4, 3));  // images where labels belong
  EXPECT_DATA_ERROR(load_dataset(s), s.labels, "expected 1 for labels");
}

TEST(Idx, RejectsTruncatedData) {
  for (bool gz : {false, true}) {
    IdxFixture f;
    DatasetSpec s = f.write(gz);
    auto bytes = pdt::idx_images(f.images, 4, 3);
    bytes.resize(bytes.size() - 5);
    pdt::write_bytes(s.root, bytes, gz);
    EXPECT_DATA_ERROR(load_dataset(s), s.root, "truncated");
    pdt::write_bytes(s.root, {0, 0}, gz);
    EXPECT_DATA_ERROR(load_dataset(s), s.root, "too short");
  }
}

TEST(Idx, RejectsACutGzipStream) {
  IdxFixture f;
  DatasetSpec s = f.write(true);
  std::ifstream in(s.root, std::ios::binary);
  std::vector<uint8_t> gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  gz.resize(gz.size() / 2);
  pdt::write_bytes(s.root, gz);
  EXPECT_DATA_ERROR(load_dataset(s), s.root);
}

TEST(Idx, RejectsCountMismatch) {
  IdxFixture f;
  DatasetSpec s = f.write(false);
  pdt::write_bytes(s.labels, pdt::idx_labels({0, 1, 2}));
  EXPECT_DATA_ERROR(load_dataset(s), s.labels, "3 labels", "6 images");
}

TEST(Idx, RejectsMissingClassAndColour) {
  IdxFixture f;
  DatasetSpec s = f.write(false);
  s.classes = {0, 7};
  EXPECT_DATA_ERROR(load_dataset(s), s.labels, "class 7 has no images");
  s.classes = {};
  s.channels = 3;
  EXPECT_DATA_ERROR(load_idx(s), s.root, "channels must be 1");
  s.channels = 1;
  s.root = f.dir / "missing";
  EXPECT_DATA_ERROR(load_dataset(s), f.dir / "missing");
}
