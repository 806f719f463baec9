#include <gtest/gtest.h>

#include <algorithm>
#include <torch/version.h>

#include <mlh/runtime/version.hpp>

TEST(RuntimeVersion, NamesTheLibTorchItWasBuiltWith) {
  const std::string v = mlh::rt::torch_version();
  EXPECT_EQ(std::count(v.begin(), v.end(), '.'), 2) << v;
  EXPECT_EQ(v.rfind(std::to_string(TORCH_VERSION_MAJOR) + ".", 0), 0u) << v;
}
