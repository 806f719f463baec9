// The small parsers: kernel CPU lists, /proc fields, cpuinfo names and features, stat lines.
#include <gtest/gtest.h>

#include "cpu_arm.hpp"
#include "cpu_cpuinfo.hpp"
#include "cpu_telemetry.hpp"
#include "cpu_text.hpp"

namespace {

using mlh::cpu::format_cpu_list;
using mlh::cpu::parse_cpu_list;

TEST(CpuList, ParsesRangesAndSingles) {
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11\n"), (std::set<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse_cpu_list("5"), (std::set<int>{5}));
}

TEST(CpuList, RejectsGarbage) {
  for (const char* text : {"", "\n", "0-", "-3", "3-1", "a", "0-3,zz", "1,,2", "0-2000000000", "0-1-2"})
    EXPECT_FALSE(parse_cpu_list(text).has_value()) << '"' << text << '"';
}

TEST(CpuList, FormatsRunsAsRanges) {
  EXPECT_EQ(format_cpu_list({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(format_cpu_list({4}), "4");
  EXPECT_EQ(format_cpu_list({}), "");
}

TEST(ProcFields, ReadsMeminfoInBytesAndRejectsTruncatedLines) {
  const char* meminfo = "MemTotal:       16318412 kB\nMemFree:        84";
  EXPECT_EQ(mlh::cpu::meminfo_bytes(meminfo, "MemTotal"), int64_t{16318412} * 1024);
  EXPECT_FALSE(mlh::cpu::meminfo_bytes(meminfo, "MemFree").has_value());
  EXPECT_FALSE(mlh::cpu::meminfo_bytes(meminfo, "MemAvailable").has_value());
  EXPECT_FALSE(mlh::cpu::meminfo_bytes("MemTotal: lots kB\n", "MemTotal").has_value());
}

TEST(ProcFields, FindsStatusFields) {
  const char* status = "Name:\tmlhost\nCpus_allowed:\tff\nCpus_allowed_list:\t0-7\n";
  EXPECT_EQ(mlh::cpu::field_value(status, "Cpus_allowed_list"), "0-7");
  EXPECT_FALSE(mlh::cpu::field_value(status, "Cpus_allowed_lis").has_value());
}

TEST(ParseInt, WholeStringOnly) {
  EXPECT_EQ(mlh::cpu::parse_int(" 42\n"), 42);
  EXPECT_EQ(mlh::cpu::parse_int("-1"), -1);
  EXPECT_FALSE(mlh::cpu::parse_int("4x").has_value());
  EXPECT_FALSE(mlh::cpu::parse_int("").has_value());
  EXPECT_FALSE(mlh::cpu::parse_int("99999999999999999999").has_value());
}

TEST(ArmNames, KnownPartsAndFallback) {
  EXPECT_EQ(mlh::cpu::arm_model("0x41", "0xd0c"), "Neoverse-N1");
  EXPECT_EQ(mlh::cpu::arm_model("0x41", "0xd4f"), "Neoverse-V2");
  EXPECT_EQ(mlh::cpu::arm_model("0x61", "0x023"), "Apple M1");
  EXPECT_EQ(mlh::cpu::arm_model("0x41", "0xd99"), "ARM CPU (implementer 0x41 part 0xd99)");
  EXPECT_EQ(mlh::cpu::arm_vendor("0x61"), "Apple");
  EXPECT_EQ(mlh::cpu::arm_vendor("0x99"), "implementer 0x99");
}

TEST(Cpuinfo, BigLittleNamesBothCoreTypes) {
  const char* cpuinfo =
      "processor\t: 0\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\nCPU part\t: 0xd05\n\n"
      "processor\t: 1\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\nCPU part\t: 0xd05\n\n"
      "processor\t: 2\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\nCPU part\t: 0xd0b\n\n";
  mlh::cpu::Cpuinfo info = mlh::cpu::parse_cpuinfo(cpuinfo);
  EXPECT_EQ(info.processors.size(), 3u);
  EXPECT_EQ(mlh::cpu::model_name(info), "Cortex-A55 + Cortex-A76");
  EXPECT_EQ(mlh::cpu::vendor_name(info), "ARM");
  EXPECT_EQ(mlh::cpu::training_features(info), std::vector<std::string>{"neon"});
}

TEST(Cpuinfo, OldArmKernelsSayNeonAndGetPartNames) {
  const char* cpuinfo =
      "processor\t: 0\nmodel name\t: ARMv7 Processor rev 4 (v7l)\n"
      "Features\t: half thumb fastmult vfp edsp neon vfpv3 tls vfpv4 idiva idivt vfpd32 lpae evtstrm crc32\n"
      "CPU implementer\t: 0x41\nCPU architecture: 7\nCPU variant\t: 0x0\nCPU part\t: 0xd03\nCPU revision\t: 4\n\n"
      "Hardware\t: BCM2835\nRevision\t: a02082\n";
  mlh::cpu::Cpuinfo info = mlh::cpu::parse_cpuinfo(cpuinfo);
  EXPECT_EQ(info.processors.size(), 1u) << "the Hardware block is not a processor";
  EXPECT_EQ(mlh::cpu::model_name(info), "Cortex-A53");
  EXPECT_EQ(mlh::cpu::training_features(info), std::vector<std::string>{"neon"});
}

TEST(Cpuinfo, CollapsesPaddedModelNames) {
  mlh::cpu::Cpuinfo info =
      mlh::cpu::parse_cpuinfo("processor\t: 0\nmodel name\t: Intel(R) Xeon(R) CPU           E5-2680 0 @ 2.70GHz\n");
  EXPECT_EQ(mlh::cpu::model_name(info), "Intel(R) Xeon(R) CPU E5-2680 0 @ 2.70GHz");
}

TEST(ProcessStat, CommandNamesWithSpacesAndParentheses) {
  std::string stat =
      "4242 (my (weird) proc) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 75 0 0 20 0 9 0 123456 1213632512 50000 "
      "18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0";
  std::optional<mlh::cpu::ProcessTimes> times = mlh::cpu::parse_process_stat(stat);
  ASSERT_TRUE(times.has_value());
  EXPECT_EQ(times->cpu_ticks, 325);
  EXPECT_EQ(times->start_ticks, 123456);
}

TEST(ProcessStat, RejectsTruncatedLines) {
  EXPECT_FALSE(mlh::cpu::parse_process_stat("4242 (x) S 1 4242").has_value());
  EXPECT_FALSE(mlh::cpu::parse_process_stat("").has_value());
  EXPECT_FALSE(mlh::cpu::parse_process_stat("no parenthesis here").has_value());
}

}  // namespace
