// Loads the real Fashion-MNIST train set (classes 0-4) when it is installed, cold and then
// from the cache, and prints both times.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <iostream>

#include "data/cache.hpp"
#include "fixtures.hpp"

using namespace protonet;

TEST(FashionMnist, TrainClasses0To4) {
  const std::string dir = PROTONET_FASHION_MNIST_DIR;
  const std::string images = dir + "/train-images-idx3-ubyte.gz", labels = dir + "/train-labels-idx1-ubyte.gz";
  if (!std::filesystem::exists(images) || !std::filesystem::exists(labels))
    GTEST_SKIP() << "Fashion-MNIST not installed in " << dir;
  TempDir cache;
  DatasetSpec s;
  s.height = s.width = 28;
  s.channels = 1;
  s.format = "idx";
  s.root = images;
  s.labels = labels;
  s.classes = {0, 1, 2, 3, 4};
  s.cache_dir = cache.path();
  reset_cache_stats();
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  const ImageSet cold = load_dataset(s);
  const auto t1 = clock::now();
  const ImageSet warm = load_dataset(s);
  const auto t2 = clock::now();
  const auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
  std::cout << "Fashion-MNIST train classes 0-4: cold " << ms(t1 - t0) << " ms, from cache " << ms(t2 - t1)
            << " ms\n";
  EXPECT_EQ(cache_stats().builds, 1u);
  EXPECT_EQ(cache_stats().hits, 1u);
  ASSERT_EQ(cold.size(), 30000u);
  EXPECT_EQ(cold.image_bytes(), 784u);
  EXPECT_EQ(cold.class_names, (std::vector<std::string>{"0", "1", "2", "3", "4"}));
  std::vector<size_t> count(5, 0);
  for (int32_t l : cold.labels) ++count.at(l);
  for (size_t c : count) EXPECT_EQ(c, 6000u);
  EXPECT_EQ(cold.labels, warm.labels);
  EXPECT_EQ(cold.pixels, warm.pixels);
  EXPECT_LT(t2 - t1, t1 - t0);
}
