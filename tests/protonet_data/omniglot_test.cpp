#include <gtest/gtest.h>

#include <filesystem>

#include "fixtures.hpp"

using namespace protonet;

namespace {

constexpr int N = 28;

// <base>/<alphabet>/<character>/<k>.png, 28x28 grayscale with pattern(seed + k).
void character(const std::string& base, const std::string& key, int seed, int count = 2) {
  for (int k = 0; k < count; ++k)
    pdt::write_png(base + "/" + key + "/0" + std::to_string(k) + ".png", N, N, 1, pdt::pattern_image(seed + k, N, N, 1));
}

DatasetSpec omni(const std::string& root) {
  DatasetSpec s;
  s.height = s.width = 28;
  s.channels = 1;
  s.format = "omniglot";
  s.root = root;
  return s;
}

uint8_t at(const ImageSet& set, size_t i, int r, int c) { return set.image(i)[r * set.width + c]; }

}  // namespace

TEST(Omniglot, AllCharactersWithoutSplit) {
  TempDir d;
  character(d.path(), "Greek/character02", 20);
  character(d.path(), "Greek/character01", 10);
  character(d.path(), "Angelic/character01", 0, 3);
  const ImageSet set = load_dataset(omni(d.path()));
  EXPECT_EQ(set.class_names, (std::vector<std::string>{"Angelic/character01/rot000", "Greek/character01/rot000",
                                                       "Greek/character02/rot000"}));
  EXPECT_EQ(set.labels, (std::vector<int32_t>{0, 0, 0, 1, 1, 2, 2}));
  EXPECT_EQ(set.height, 28);
  EXPECT_EQ(set.width, 28);
  for (int r = 0; r < N; ++r)
    for (int c = 0; c < N; ++c) ASSERT_EQ(at(set, 3, r, c), pdt::pattern(10, r, c));
}

TEST(Omniglot, RotationsAreCounterClockwiseLikeRot90) {
  TempDir d;
  character(d.path(), "Greek/character01", 5, 1);
  DatasetSpec s = omni(d.path());
  s.rotations = true;
  const ImageSet set = load_dataset(s);
  EXPECT_EQ(set.class_names, (std::vector<std::string>{"Greek/character01/rot000", "Greek/character01/rot090",
                                                       "Greek/character01/rot180", "Greek/character01/rot270"}));
  ASSERT_EQ(set.size(), 4u);
  EXPECT_EQ(set.labels, (std::vector<int32_t>{0, 1, 2, 3}));
  for (int r = 0; r < N; ++r)
    for (int c = 0; c < N; ++c) {
      ASSERT_EQ(at(set, 0, r, c), pdt::pattern(5, r, c));
      // torch.rot90(x, 1): out[r][c] = x[c][W-1-r] (the right column becomes the top row)
      ASSERT_EQ(at(set, 1, r, c), pdt::pattern(5, c, N - 1 - r));
      ASSERT_EQ(at(set, 2, r, c), pdt::pattern(5, N - 1 - r, N - 1 - c));
      ASSERT_EQ(at(set, 3, r, c), pdt::pattern(5, N - 1 - c, r));
    }
}

TEST(Omniglot, InvertAndResizeFrom105) {
  TempDir d;
  // Black stroke (0) on white (255), as in the Omniglot PNGs: a vertical bar in the left third.
  std::vector<uint8_t> px(105 * 105, 255);
  for (int r = 0; r < 105; ++r)
    for (int c = 0; c < 35; ++c) px[r * 105 + c] = 0;
  pdt::write_png(d / "A/character01/1.png", 105, 105, 1, px);
  DatasetSpec s = omni(d.path());
  s.invert = true;
  const ImageSet set = load_dataset(s);
  ASSERT_EQ(set.image_bytes(), 28u * 28);
  EXPECT_EQ(at(set, 0, 14, 2), 255);   // stroke is bright
  EXPECT_EQ(at(set, 0, 14, 25), 0);    // background dark
  s.invert = false;
  EXPECT_EQ(at(load_dataset(s), 0, 14, 2), 0);
}

TEST(Omniglot, SplitFileSelectsAndOrdersClasses) {
  TempDir d;
  character(d.path(), "Greek/character01", 10);
  character(d.path(), "Greek/character02", 20);
  character(d.path(), "Latin/character01", 30);
  pdt::write_text(d / "splits/train.txt", "Latin/character01/rot090\r\n\nGreek/character01/rot000\nGreek/character01/rot180\n");
  DatasetSpec s = omni(d.path());
  s.split = "train";
  const ImageSet set = load_dataset(s);
  EXPECT_EQ(set.class_names, (std::vector<std::string>{"Latin/character01/rot090", "Greek/character01/rot000",
                                                       "Greek/character01/rot180"}));
  ASSERT_EQ(set.size(), 6u);
  EXPECT_EQ(at(set, 0, 0, 0), pdt::pattern(30, 0, N - 1));  // rot090 of image (30)
  EXPECT_EQ(at(set, 2, 3, 4), pdt::pattern(10, 3, 4));
  // An explicit split file wins over splits/<split>.txt; a line without rot gives rot000,
  // plus the rotations when asked for.
  pdt::write_text(d / "other.txt", "Greek/character02\n");
  s.split_file = d / "other.txt";
  EXPECT_EQ(load_dataset(s).class_names, (std::vector<std::string>{"Greek/character02/rot000"}));
  s.rotations = true;
  EXPECT_EQ(load_dataset(s).class_names.size(), 4u);
  // A split name without a file: every character.
  s.split_file.clear();
  s.split = "val";
  s.rotations = false;
  EXPECT_EQ(load_dataset(s).class_names.size(), 3u);
}

TEST(Omniglot, MergesBackgroundAndEvaluation) {
  TempDir d;
  character(d / "images_background", "Greek/character01", 10);
  character(d / "images_evaluation", "Atlantean/character01", 40);
  const ImageSet set = load_dataset(omni(d.path()));
  EXPECT_EQ(set.class_names, (std::vector<std::string>{"Atlantean/character01/rot000", "Greek/character01/rot000"}));
  pdt::write_text(d / "split.txt", "Greek/character01/rot000\nAtlantean/character01/rot270\n");
  DatasetSpec s = omni(d.path());
  s.split_file = d / "split.txt";
  const ImageSet sub = load_dataset(s);
  EXPECT_EQ(sub.class_names, (std::vector<std::string>{"Greek/character01/rot000", "Atlantean/character01/rot270"}));
  EXPECT_EQ(at(sub, 0, 1, 2), pdt::pattern(10, 1, 2));
}

TEST(Omniglot, Rejections) {
  TempDir d;
  character(d.path(), "Greek/character01", 10);
  DatasetSpec s = omni(d.path());
  pdt::write_text(d / "split.txt", "Greek/character01/rot000\nGreek/character09/rot000\n");
  s.split_file = d / "split.txt";
  EXPECT_DATA_ERROR(load_dataset(s), d / "split.txt", "line 2", "Greek/character09");
  pdt::write_text(d / "split.txt", "Greek/character01/rot045\n");
  EXPECT_DATA_ERROR(load_dataset(s), d / "split.txt", "line 1", "rot045");
  pdt::write_text(d / "split.txt", "Greek\n");
  EXPECT_DATA_ERROR(load_dataset(s), d / "split.txt", "line 1");
  s.split_file = d / "nope.txt";
  EXPECT_DATA_ERROR(load_dataset(s), d / "nope.txt");
  s.split_file.clear();
  std::filesystem::create_directories(d / "Greek/character02");
  EXPECT_DATA_ERROR(load_dataset(s), d / "Greek/character02", "no images");
}
