// kern.osproductversion parsing and the version comparison the probe rules rest on.
#include <gtest/gtest.h>

#include "mps_version.hpp"

namespace {

using mlh::mps::at_least;
using mlh::mps::MacosVersion;
using mlh::mps::parse_macos_version;

void expect_version(const char* text, int major, int minor, int patch) {
  std::optional<MacosVersion> v = parse_macos_version(text);
  ASSERT_TRUE(v.has_value()) << text;
  EXPECT_EQ(v->major, major) << text;
  EXPECT_EQ(v->minor, minor) << text;
  EXPECT_EQ(v->patch, patch) << text;
}

TEST(MpsVersion, OneToThreeParts) {
  expect_version("12.3", 12, 3, 0);
  expect_version("12.3.1", 12, 3, 1);
  expect_version("15", 15, 0, 0);
  expect_version("14.5", 14, 5, 0);
  expect_version("10.16", 10, 16, 0);  // what Big Sur tells programs built for older SDKs
  expect_version("012.03", 12, 3, 0);
}

TEST(MpsVersion, AnythingElseIsNoVersion) {
  for (const char* text : {"", "garbage", "12.", ".3", "12..3", "1.2.3.4", "12.3a", "v12.3", "-12.3", "12.-3",
                           "+12", " 12.3", "12.3 ", "12,3", "99999.0", "12.3.99999999999999999999"})
    EXPECT_FALSE(parse_macos_version(text).has_value()) << '"' << text << '"';
}

TEST(MpsVersion, AtLeastComparesMajorThenMinor) {
  EXPECT_TRUE(at_least({12, 3, 0}, 12, 3));
  EXPECT_TRUE(at_least({12, 3, 1}, 12, 3));
  EXPECT_TRUE(at_least({12, 4, 0}, 12, 3));
  EXPECT_TRUE(at_least({13, 0, 0}, 12, 3));
  EXPECT_TRUE(at_least({15, 0, 0}, 12, 3));
  EXPECT_FALSE(at_least({12, 2, 9}, 12, 3));
  EXPECT_FALSE(at_least({12, 1, 0}, 12, 3));
  EXPECT_FALSE(at_least({11, 7, 0}, 12, 3));
  EXPECT_FALSE(at_least({10, 16, 0}, 12, 3));
}

}  // namespace
