#include <gtest/gtest.h>

#include <filesystem>

#include "data/folder.hpp"
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

// What a run says before it reads a folder: the files it skips, and how the images are stored
// and read. 40x40 RGB and 56x48 RGBA images read as the default 28x28 grayscale are resized
// (aspect ratio not kept) and converted; read at their own size and colour, nothing is.
TEST(Folder, TheSurveyNamesSkippedFilesAndHowTheImagesAreStoredAndRead) {
  TempDir d;
  for (int i = 0; i < 3; ++i) pdt::write_png(d / ("cat/" + std::to_string(i) + ".png"), 40, 40, 3, pdt::pattern_image(i, 40, 40, 3));
  pdt::write_png(d / "dog/0.png", 56, 48, 4, pdt::pattern_image(5, 56, 48, 4));
  pdt::write_text(d / "dog/notes.txt", "a note");
  DatasetSpec spec = folder_spec(d.path(), 28, 28, 1);
  const FolderSurvey survey = survey_folder(spec);
  EXPECT_EQ(survey.skipped, (std::vector<std::string>{d / "dog/notes.txt"}));
  EXPECT_EQ(survey.images, 4);
  EXPECT_EQ(survey.unreadable, 0);
  EXPECT_EQ(survey.stored.at({40, 40, 3}), 3);
  EXPECT_EQ(survey.stored.at({56, 48, 4}), 1);

  bool converts = false;
  const std::string line = describe_stored_images(survey, spec, &converts);
  EXPECT_TRUE(converts);
  EXPECT_EQ(line, "4 images (3 at 40x40 RGB, 1 at 56x48 RGBA), read as 28x28 grayscale (data.width, data.height, "
                  "data.channels); resized to that without keeping the aspect ratio (area-averaged where smaller, "
                  "bilinear where larger); colour converted to grayscale (luminance)");

  std::filesystem::remove_all(d / "dog");
  pdt::write_png(d / "dog/0.png", 40, 40, 3, pdt::pattern_image(6, 40, 40, 3));
  spec = folder_spec(d.path(), 40, 40, 3);
  EXPECT_EQ(describe_stored_images(survey_folder(spec), spec, &converts),
            "4 images (4 at 40x40 RGB), read as 40x40 RGB (data.width, data.height, data.channels)");
  EXPECT_FALSE(converts);
}
