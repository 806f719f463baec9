#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "data/cache.hpp"
#include "fixtures.hpp"

namespace fs = std::filesystem;
using namespace protonet;

namespace {

struct CacheFixture {
  TempDir d;
  DatasetSpec spec;
  CacheFixture() {
    spec.channels = 1;
    pdt::write_png(d / "data/a/1.png", 6, 5, 1, pdt::pattern_image(1, 6, 5, 1));
    pdt::write_png(d / "data/a/2.png", 6, 5, 1, pdt::pattern_image(2, 6, 5, 1));
    pdt::write_png(d / "data/b/1.png", 6, 5, 1, pdt::pattern_image(3, 6, 5, 1));
    spec.format = "folder";
    spec.root = d / "data";
    spec.height = 5;
    spec.width = 6;
    spec.cache_dir = d / "cache";
    reset_cache_stats();
  }
};

void expect_same(const ImageSet& a, const ImageSet& b) {
  EXPECT_EQ(a.channels, b.channels);
  EXPECT_EQ(a.height, b.height);
  EXPECT_EQ(a.width, b.width);
  EXPECT_EQ(a.class_names, b.class_names);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_EQ(a.pixels, b.pixels);
}

}  // namespace

TEST(Cache, SecondLoadReadsTheCache) {
  CacheFixture f;
  const ImageSet first = load_dataset(f.spec);
  EXPECT_EQ(cache_stats().builds, 1u);
  EXPECT_EQ(cache_stats().writes, 1u);
  EXPECT_TRUE(fs::exists(cache_path(f.spec)));
  const ImageSet second = load_dataset(f.spec);
  EXPECT_EQ(cache_stats().hits, 1u);
  EXPECT_EQ(cache_stats().builds, 1u);
  expect_same(first, second);
  // No temporaries left behind.
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(f.spec.cache_dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1u);
}

TEST(Cache, EverySpecFieldNamesItsOwnFile) {
  CacheFixture f;
  DatasetSpec other = f.spec;
  EXPECT_EQ(cache_path(other), cache_path(f.spec));
  other.invert = true;
  EXPECT_NE(cache_path(other), cache_path(f.spec));
  other = f.spec;
  other.classes = {1};
  EXPECT_NE(cache_path(other), cache_path(f.spec));
  other = f.spec;
  other.height = 6;
  EXPECT_NE(cache_path(other), cache_path(f.spec));
  other = f.spec;
  other.split = "train";
  EXPECT_NE(cache_path(other), cache_path(f.spec));
  // A different spec reads its own file, not the first one's.
  load_dataset(f.spec);
  other = f.spec;
  other.invert = true;
  const ImageSet inv = load_dataset(other);
  EXPECT_EQ(cache_stats().builds, 2u);
  EXPECT_EQ(inv.image(0)[0], 255 - pdt::pattern(1, 0, 0));
}

TEST(Cache, TouchingOrChangingASourceRebuilds) {
  CacheFixture f;
  load_dataset(f.spec);
  // Same content, newer mtime.
  const std::string src = f.d / "data/a/2.png";
  fs::last_write_time(src, fs::last_write_time(src) + std::chrono::seconds(5));
  load_dataset(f.spec);
  EXPECT_EQ(cache_stats().builds, 2u);
  EXPECT_EQ(cache_stats().rejected, 1u);
  load_dataset(f.spec);
  EXPECT_EQ(cache_stats().hits, 1u);
  // New content.
  pdt::write_png(src, 6, 5, 1, pdt::pattern_image(9, 6, 5, 1));
  fs::last_write_time(src, fs::last_write_time(src) + std::chrono::seconds(10));
  const ImageSet set = load_dataset(f.spec);
  EXPECT_EQ(cache_stats().builds, 3u);
  EXPECT_EQ(set.image(1)[7], pdt::pattern(9, 1, 1));
  // A new image in a class folder.
  pdt::write_png(f.d / "data/b/2.png", 6, 5, 1, pdt::pattern_image(4, 6, 5, 1));
  EXPECT_EQ(load_dataset(f.spec).size(), 4u);
  EXPECT_EQ(cache_stats().builds, 4u);
}

TEST(Cache, CorruptOrTruncatedCacheIsRebuilt) {
  CacheFixture f;
  const ImageSet good = load_dataset(f.spec);
  const std::string path = cache_path(f.spec);
  const auto size = fs::file_size(path);
  {  // flip a pixel byte
    std::fstream io(path, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(static_cast<std::streamoff>(size - 10));
    io.put('\x5a');
  }
  expect_same(load_dataset(f.spec), good);
  EXPECT_EQ(cache_stats().builds, 2u);
  fs::resize_file(path, size / 2);
  expect_same(load_dataset(f.spec), good);
  EXPECT_EQ(cache_stats().builds, 3u);
  pdt::write_text(path, "garbage");
  expect_same(load_dataset(f.spec), good);
  pdt::write_text(path, "");
  expect_same(load_dataset(f.spec), good);
  EXPECT_EQ(cache_stats().builds, 5u);
  EXPECT_EQ(cache_stats().rejected, 4u);
  expect_same(load_dataset(f.spec), good);
  EXPECT_EQ(cache_stats().hits, 1u);
}

TEST(Cache, IdxAndGzipThroughTheCache) {
  TempDir d;
  std::vector<std::vector<uint8_t>> imgs{std::vector<uint8_t>(4, 1), std::vector<uint8_t>(4, 2)};
  pdt::write_bytes(d / "i.gz", pdt::idx_images(imgs, 2, 2), true);
  pdt::write_bytes(d / "l.gz", pdt::idx_labels({3, 5}), true);
  DatasetSpec s;
  s.height = s.width = 28;
  s.channels = 1;
  s.format = "idx";
  s.root = d / "i.gz";
  s.labels = d / "l.gz";
  s.height = s.width = 2;
  s.cache_dir = d / "c";
  reset_cache_stats();
  const ImageSet a = load_dataset(s);
  const ImageSet b = load_dataset(s);
  EXPECT_EQ(cache_stats().hits, 1u);
  expect_same(a, b);
  EXPECT_EQ(b.class_names, (std::vector<std::string>{"3", "5"}));
}

TEST(Dataset, UnknownFormatListsTheKnownOnes) {
  DatasetSpec s;
  s.height = s.width = 28;
  s.channels = 1;
  s.format = "cifar";
  s.root = "/data/cifar";
  EXPECT_DATA_ERROR(load_dataset(s), "/data/cifar", "cifar", "idx", "omniglot", "miniimagenet", "folder");
  s.format = "folder";
  s.channels = 2;
  EXPECT_DATA_ERROR(load_dataset(s), "/data/cifar", "channels");
}
