#include <gtest/gtest.h>

#include "fixtures.hpp"

using namespace protonet;

namespace {
DatasetSpec mini(const std::string& root, const std::string& split) {
  DatasetSpec s;
  s.height = s.width = 28;
  s.channels = 1;
  s.format = "miniimagenet";
  s.root = root;
  s.split = split;
  s.height = 84;
  s.width = 84;
  s.channels = 3;
  return s;
}
void solid_jpg(const std::string& path, uint8_t r, uint8_t g, uint8_t b, int size = 100) {
  std::vector<uint8_t> px;
  for (int i = 0; i < size * size; ++i) px.insert(px.end(), {r, g, b});
  pdt::write_jpg(path, size, size, 3, px);
}
}  // namespace

TEST(MiniImageNet, LoadsTheSplitCsv) {
  TempDir d;
  solid_jpg(d / "images/n02000000001.jpg", 200, 0, 0);
  solid_jpg(d / "images/n02000000002.jpg", 0, 200, 0, 84);
  solid_jpg(d / "images/n01000000001.jpg", 0, 0, 200, 120);
  pdt::write_text(d / "train.csv",
                  "filename,label\nn02000000001.jpg,n02000000\nn02000000002.jpg,n02000000\n"
                  "n01000000001.jpg,n01000000\n");
  pdt::write_text(d / "val.csv", "filename,label\r\nn01000000001.jpg,n01000000\r\n");
  const ImageSet set = load_dataset(mini(d.path(), "train"));
  EXPECT_EQ(set.class_names, (std::vector<std::string>{"n02000000", "n01000000"}));
  EXPECT_EQ(set.labels, (std::vector<int32_t>{0, 0, 1}));
  EXPECT_EQ(set.channels, 3);
  EXPECT_EQ(set.height, 84);
  EXPECT_EQ(set.width, 84);
  const size_t plane = 84 * 84;
  // CHW: image 0 is red, image 1 green, image 2 blue (JPEG: approximately).
  EXPECT_NEAR(set.image(0)[0 * plane + 500], 200, 6);
  EXPECT_NEAR(set.image(0)[1 * plane + 500], 0, 6);
  EXPECT_NEAR(set.image(1)[1 * plane + 500], 200, 6);
  EXPECT_NEAR(set.image(2)[2 * plane + 500], 200, 6);
  EXPECT_NEAR(set.image(2)[0 * plane + 500], 0, 6);
  EXPECT_EQ(load_dataset(mini(d.path(), "val")).size(), 1u);
}

TEST(MiniImageNet, Rejections) {
  TempDir d;
  solid_jpg(d / "images/a.jpg", 1, 2, 3, 10);
  EXPECT_DATA_ERROR(load_dataset(mini(d.path(), "test")), d / "test.csv");
  pdt::write_text(d / "test.csv", "filename,label\na.jpg,n1\na.jpg\n");
  EXPECT_DATA_ERROR(load_dataset(mini(d.path(), "test")), d / "test.csv", "line 3");
  pdt::write_text(d / "test.csv", "filename,label\na.jpg,n1,extra\n");
  EXPECT_DATA_ERROR(load_dataset(mini(d.path(), "test")), d / "test.csv", "line 2");
  pdt::write_text(d / "test.csv", "file,class\na.jpg,n1\n");
  EXPECT_DATA_ERROR(load_dataset(mini(d.path(), "test")), d / "test.csv", "line 1", "header");
  pdt::write_text(d / "test.csv", "filename,label\na.jpg,n1\nmissing.jpg,n1\n");
  EXPECT_DATA_ERROR(load_dataset(mini(d.path(), "test")), d / "test.csv", "line 3", "missing.jpg");
  EXPECT_DATA_ERROR(load_dataset(mini(d.path(), "")), "split");
}
