// The key=value text of recorded machines, the conversion to a snapshot that the live
// values go through too, and the live reader on this machine.
#include <gtest/gtest.h>
#include <sys/utsname.h>

#include "mps_snapshot.hpp"

namespace {

using mlh::mps::MacSnapshot;
using mlh::mps::parse_values;
using mlh::mps::snapshot_from_values;
using mlh::mps::SystemValues;

TEST(MpsValues, ParsesKeyValueLines) {
  SystemValues values = parse_values(
      "# a comment = not a value\n"
      "\n"
      "hw.memsize=17179869184\r\n"
      "  machdep.cpu.brand_string = Apple M1 \n"
      "no equals sign here\n"
      "=no key\n"
      "odd.key=a=b\n"
      "kern.osproductversion=13.4");  // no final newline
  SystemValues expected{{"hw.memsize", "17179869184"},
                        {"machdep.cpu.brand_string", " Apple M1 "},
                        {"odd.key", "a=b"},
                        {"kern.osproductversion", "13.4"}};
  EXPECT_EQ(values, expected);
  EXPECT_TRUE(parse_values("").empty());
}

TEST(MpsValues, ALaterLineWins) {
  EXPECT_EQ(parse_values("hw.memsize=1\nhw.memsize=2\n").at("hw.memsize"), "2");
}

TEST(MpsValues, SnapshotTakesTheKnownKeys) {
  MacSnapshot s = snapshot_from_values({{"uname.sysname", "Darwin"},
                                        {"uname.machine", "arm64"},
                                        {"machdep.cpu.brand_string", "  Apple M2 Max\n"},
                                        {"hw.memsize", "34359738368"},
                                        {"kern.osproductversion", " 14.5 "},
                                        {"hw.optional.arm64", "1"},
                                        {"vm.page_free_count", "412517"},
                                        {"vm.pagesize", "16384"},
                                        {"hw.ncpu", "12"}});
  EXPECT_EQ(s.os, "Darwin");
  EXPECT_EQ(s.machine, "arm64");
  EXPECT_EQ(s.brand, "Apple M2 Max");
  EXPECT_EQ(s.os_version, "14.5");
  EXPECT_EQ(s.memsize, int64_t{34359738368});
  EXPECT_EQ(s.arm64, 1);
  EXPECT_EQ(s.page_free_count, 412517);
  EXPECT_EQ(s.page_size, 16384);
}

TEST(MpsValues, MissingKeysAreUnknown) {
  MacSnapshot s = snapshot_from_values({});
  EXPECT_EQ(s.os, "");
  EXPECT_EQ(s.machine, "");
  EXPECT_EQ(s.brand, "");
  EXPECT_EQ(s.os_version, "");
  EXPECT_FALSE(s.memsize);
  EXPECT_FALSE(s.arm64);
  EXPECT_FALSE(s.page_free_count);
  EXPECT_FALSE(s.page_size);
}

TEST(MpsValues, MalformedNumbersAreUnknown) {
  for (const char* bad : {"", " ", "garbage", "16GB", "1.5", "0x10", "17179869184 17179869184", "99999999999999999999"}) {
    MacSnapshot s = snapshot_from_values({{"hw.memsize", bad}, {"hw.optional.arm64", bad}});
    EXPECT_FALSE(s.memsize) << '"' << bad << '"';
    EXPECT_FALSE(s.arm64) << '"' << bad << '"';
  }
  EXPECT_EQ(snapshot_from_values({{"hw.memsize", " 8589934592\n"}}).memsize, int64_t{8589934592});
}

// On this machine the live reader answers uname's names; sysctl keys appear only on macOS.
TEST(MpsValues, LiveValuesOfThisMachine) {
  utsname names{};
  ASSERT_EQ(::uname(&names), 0);
  SystemValues values = mlh::mps::read_live_values();
  EXPECT_EQ(values.at("uname.sysname"), names.sysname);
  EXPECT_EQ(values.at("uname.machine"), names.machine);
#ifdef __APPLE__
  EXPECT_GT(snapshot_from_values(values).memsize.value_or(0), 0);
#else
  EXPECT_EQ(values.size(), 2u);
#endif
}

}  // namespace
