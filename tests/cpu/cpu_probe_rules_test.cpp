// Single probe rules on hand-built snapshots: each test changes the one input it is about.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cpu_probe.hpp"

namespace {

using mlh::cpu::CgroupFiles;
using mlh::cpu::SystemSnapshot;
using nlohmann::json;

// `n` x86 CPUs on `n` distinct cores of one package, without topology files.
std::string x86_cpuinfo(int n, const std::string& flags = "sse4_2 avx avx2 fma") {
  std::string text;
  for (int i = 0; i < n; ++i)
    text += "processor\t: " + std::to_string(i) + "\nvendor_id\t: GenuineIntel\nmodel name\t: Test CPU\n" +
            "physical id\t: 0\ncore id\t\t: " + std::to_string(i) + "\nflags\t\t: " + flags + "\n\n";
  return text;
}

SystemSnapshot four_cores() {
  SystemSnapshot s;
  s.cpuinfo = x86_cpuinfo(4);
  s.meminfo = "MemTotal:       8000000 kB\nMemFree:        5000000 kB\nMemAvailable:   6000000 kB\n";
  s.online = "0-3\n";
  s.affinity = "0-3";
  return s;
}

TEST(CpuProbeRules, V2QuotaCapsLogicalAndPhysicalCounts) {
  SystemSnapshot s = four_cores();
  CgroupFiles leaf;
  leaf.cpu_max = "250000 100000\n";
  s.cgroups = {leaf};
  mlh::DeviceInfo d = mlh::cpu::probe_cpu(s);
  EXPECT_EQ(d.logical_units, 3);
  EXPECT_EQ(d.compute_units, 3);
  EXPECT_EQ(d.recommended_threads, 3);
  EXPECT_EQ(json::parse(d.details_json)["physical_cores"], 4);
}

TEST(CpuProbeRules, V1QuotaBelowOneCpuStillGivesOneThread) {
  SystemSnapshot s = four_cores();
  CgroupFiles leaf;
  leaf.cpu_cfs_quota_us = "50000\n";
  leaf.cpu_cfs_period_us = "100000\n";
  s.cgroups = {leaf};
  mlh::DeviceInfo d = mlh::cpu::probe_cpu(s);
  EXPECT_EQ(d.logical_units, 1);
  EXPECT_EQ(d.recommended_threads, 1);
  EXPECT_DOUBLE_EQ(json::parse(d.details_json)["cgroup_cpu_limit"].get<double>(), 0.5);
}

TEST(CpuProbeRules, AffinityRestrictsOnlineCpus) {
  SystemSnapshot s = four_cores();
  s.affinity = "1,3,9";  // CPU 9 is not online
  mlh::DeviceInfo d = mlh::cpu::probe_cpu(s);
  EXPECT_EQ(d.logical_units, 2);
  EXPECT_EQ(json::parse(d.details_json)["affinity"], "1,3");
}

TEST(CpuProbeRules, DisjointAffinityAndOnlineTrustTheAffinity) {
  SystemSnapshot s = four_cores();
  s.affinity = "8-9";
  EXPECT_EQ(mlh::cpu::probe_cpu(s).logical_units, 2);
}

TEST(CpuProbeRules, WithoutAnyTopologyEachCpuIsACore) {
  SystemSnapshot s;
  s.affinity = "0-5";
  mlh::DeviceInfo d = mlh::cpu::probe_cpu(s);
  EXPECT_EQ(d.logical_units, 6);
  EXPECT_EQ(d.compute_units, 6);
  EXPECT_TRUE(json::parse(d.details_json)["sockets"].is_null());
}

TEST(CpuProbeRules, SysfsTopologyWinsOverCpuinfo) {
  SystemSnapshot s = four_cores();  // cpuinfo: 4 cores
  for (int cpu = 0; cpu < 4; ++cpu) s.topology[cpu] = {"0\n", std::to_string(cpu % 2) + "\n"};
  EXPECT_EQ(mlh::cpu::probe_cpu(s).compute_units, 2);
}

TEST(CpuProbeRules, UnknownArmPackageLeavesSocketsUnknown) {
  SystemSnapshot s;
  s.online = "0-1";
  s.topology[0] = {"-1\n", "0\n"};
  s.topology[1] = {"-1\n", "1\n"};
  mlh::DeviceInfo d = mlh::cpu::probe_cpu(s);
  EXPECT_EQ(d.compute_units, 2);
  EXPECT_TRUE(json::parse(d.details_json)["sockets"].is_null());
}

TEST(CpuProbeRules, MemoryLimitAboveRamChangesNothing) {
  SystemSnapshot s = four_cores();
  CgroupFiles leaf;
  leaf.memory_max = "17179869184\n";  // 16 GiB on an 8 GB machine
  leaf.memory_current = "1000000000\n";
  s.cgroups = {leaf};
  mlh::DeviceInfo d = mlh::cpu::probe_cpu(s);
  EXPECT_EQ(d.memory_total_bytes, int64_t{8000000} * 1024);
  EXPECT_EQ(d.memory_free_bytes, int64_t{6000000} * 1024);
}

TEST(CpuProbeRules, MemoryHeadroomCapsFreeMemory) {
  SystemSnapshot s = four_cores();
  CgroupFiles leaf;
  leaf.memory_limit_in_bytes = "2147483648\n";  // v1, 2 GiB
  leaf.memory_usage_in_bytes = "1610612736\n";  // 1.5 GiB used
  s.cgroups = {leaf};
  mlh::DeviceInfo d = mlh::cpu::probe_cpu(s);
  EXPECT_EQ(d.memory_total_bytes, int64_t{2147483648});
  EXPECT_EQ(d.memory_free_bytes, int64_t{536870912});
}

TEST(CpuProbeRules, OldKernelsWithoutMemAvailableUseMemFree) {
  SystemSnapshot s = four_cores();
  s.meminfo = "MemTotal:       8000000 kB\nMemFree:        5000000 kB\n";
  EXPECT_EQ(mlh::cpu::probe_cpu(s).memory_free_bytes, int64_t{5000000} * 1024);
}

TEST(CpuProbeRules, AmxFp16MakesFp16FastAndRunnable) {
  SystemSnapshot s = four_cores();
  s.cpuinfo = x86_cpuinfo(1, "avx2 fma amx_tile amx_fp16");
  mlh::DeviceInfo d = mlh::cpu::probe_cpu(s);
  EXPECT_TRUE(d.fast_precisions & MLH_PRECISION_FP16);
  EXPECT_TRUE(d.precisions & MLH_PRECISION_FP16);
  EXPECT_FALSE(d.fast_precisions & MLH_PRECISION_BF16);
}

TEST(CpuProbeRules, NoFp16WithoutNativeSupport) {
  mlh::DeviceInfo d = mlh::cpu::probe_cpu(four_cores());
  EXPECT_FALSE(d.precisions & MLH_PRECISION_FP16);
  EXPECT_FALSE(d.fast_precisions & MLH_PRECISION_FP16);
}

}  // namespace
