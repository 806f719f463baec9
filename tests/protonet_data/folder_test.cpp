#include <gtest/gtest.h>

#include <filesystem>

#include "fixtures.hpp"

using namespace protonet;

namespace {
DatasetSpec folder_spec(const std::string& root, int h, int w, int c) {
  DatasetSpec s;
  s.height = s.width = 28;
  s.channels = 1;
  s.format = "folder";
  s.root = root;
  s.height = h;
  s.width = w;
  s.channels = c;
  return s;
}
}  // namespace

TEST(Folder, LoadsSortedClassesAndImages) {
  TempDir d;
  // Written out of order: classes and files must come back sorted.
  pdt::write_png(d / "zebra/b.png", 4, 3, 3, pdt::pattern_image(2, 4, 3, 3));
  pdt::write_png(d / "zebra/a.PNG", 4, 3, 3, pdt::pattern_image(1, 4, 3, 3));
  pdt::write_png(d / "ant/x.png", 4, 3, 3, pdt::pattern_image(0, 4, 3, 3));
  pdt::write_text(d / "ant/notes.txt", "not an image, skipped");
  pdt::write_text(d / "README", "a file at the root, skipped");
  const ImageSet set = load_dataset(folder_spec(d.path(), 3, 4, 3));
  EXPECT_EQ(set.class_names, (std::vector<std::string>{"ant", "zebra"}));
  EXPECT_EQ(set.labels, (std::vector<int32_t>{0, 1, 1}));
  ASSERT_EQ(set.pixels.size(), 3u * 3 * 3 * 4);
  // CHW: pixel (r, c) of channel ch at ch*H*W + r*W + c; images: seeds 0, 1 (a), 2 (b).
  const int seeds[3] = {0, 1, 2};
  for (size_t i = 0; i < 3; ++i)
    for (int ch = 0; ch < 3; ++ch)
      for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 4; ++c) ASSERT_EQ(set.image(i)[ch * 12 + r * 4 + c], pdt::pattern(seeds[i], r, c, ch));
}

TEST(Folder, JpegApproximatelyAndResized) {
  TempDir d;
  pdt::write_jpg(d / "a/1.jpeg", 8, 8, 3, std::vector<uint8_t>(8 * 8 * 3, 120));
  pdt::write_jpg(d / "b/1.JPG", 16, 16, 3, std::vector<uint8_t>(16 * 16 * 3, 30));
  const ImageSet set = load_dataset(folder_spec(d.path(), 8, 8, 3));
  ASSERT_EQ(set.size(), 2u);
  for (size_t k = 0; k < set.image_bytes(); ++k) {
    EXPECT_NEAR(set.image(0)[k], 120, 3);
    EXPECT_NEAR(set.image(1)[k], 30, 3);
  }
}

TEST(Folder, Rejections) {
  TempDir d;
  EXPECT_DATA_ERROR(load_dataset(folder_spec(d.path(), 4, 4, 1)), d.path(), "no class subfolders");
  EXPECT_DATA_ERROR(load_dataset(folder_spec(d / "missing", 4, 4, 1)), d / "missing", "not a folder");
  pdt::write_png(d / "a/1.png", 4, 4, 1, pdt::pattern_image(0, 4, 4, 1));
  std::filesystem::create_directories(d / "empty");
  pdt::write_text(d / "empty/readme.txt", "no images here");
  EXPECT_DATA_ERROR(load_dataset(folder_spec(d.path(), 4, 4, 1)), d / "empty", "no .png/.jpg/.jpeg images");
  std::filesystem::remove_all(d / "empty");
  pdt::write_text(d / "a/2.png", "not really a png");
  EXPECT_DATA_ERROR(load_dataset(folder_spec(d.path(), 4, 4, 1)), d / "a/2.png");
}
