// The CPU probe on recorded machines (tests/fixtures/cpu), read through the same
// snapshot reader the plugin runs on "/".
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <string>

#include "cpu_probe.hpp"
#include "temp_dir.hpp"
#include "cpu_snapshot.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace {

using nlohmann::json;

constexpr int64_t kKiB = 1024;
constexpr int64_t kGiB = int64_t{1} << 30;
constexpr uint32_t kFp32Fp64 = MLH_PRECISION_FP32 | MLH_PRECISION_FP64;

mlh::DeviceInfo probe_fixture(const std::string& name) {
  return mlh::cpu::probe_cpu(mlh::cpu::read_snapshot(std::string(MLH_CPU_FIXTURE_DIR) + "/" + name));
}

json details_of(const mlh::DeviceInfo& d) {
  json details = json::parse(d.details_json);
  EXPECT_TRUE(details.is_object());
  return details;
}

// What every CPU record says, whatever the machine.
void expect_common(const mlh::DeviceInfo& d) {
  EXPECT_EQ(d.device_class, MLH_DEVICE_CLASS_CPU);
  EXPECT_EQ(d.index, 0);
  EXPECT_TRUE(d.available);
  EXPECT_EQ(d.kind, "cpu");
  EXPECT_EQ(d.torch_device, "cpu");
  EXPECT_FALSE(d.name.empty());
  EXPECT_TRUE(d.memory_unified);
  EXPECT_EQ(d.score_hint, 0);
  EXPECT_EQ(d.recommended_threads, d.compute_units);
  EXPECT_EQ(d.precisions & d.fast_precisions, d.fast_precisions) << "fast precisions must be runnable";
  EXPECT_TRUE(d.precisions & MLH_PRECISION_BF16) << "bf16 always runs, emulated if need be";
}

TEST(CpuFixture, ThisMachineAmdEpyc) {
  mlh::DeviceInfo d = probe_fixture("amd_epyc_2core");
  expect_common(d);
  EXPECT_EQ(d.name, "AMD EPYC");
  EXPECT_EQ(d.vendor, "AuthenticAMD");
  EXPECT_EQ(d.logical_units, 2);
  EXPECT_EQ(d.compute_units, 2);  // topology: core_id 0 and 1 in package 0
  EXPECT_EQ(d.memory_total_bytes, 24684084 * kKiB);
  EXPECT_EQ(d.memory_free_bytes, 23409484 * kKiB);  // v1 memory limits are "unlimited"
  EXPECT_EQ(d.features, "sse4_2,avx,avx2,fma,avx512f,avx512bw,avx512vl,avx512_vnni,avx512_bf16");
  EXPECT_EQ(d.fast_precisions, kFp32Fp64 | MLH_PRECISION_BF16);  // Zen 4 has avx512_bf16
  EXPECT_EQ(d.precisions, kFp32Fp64 | MLH_PRECISION_BF16);
  json details = details_of(d);
  EXPECT_EQ(details["architecture"], "x86_64");
  EXPECT_EQ(details["sockets"], 1);
  EXPECT_EQ(details["physical_cores"], 2);
  EXPECT_EQ(details["logical_cpus_online"], 2);
  EXPECT_EQ(details["logical_cpus_usable"], 2);
  EXPECT_EQ(details["affinity"], "0-1");
  EXPECT_TRUE(details["cgroup_cpu_limit"].is_null());
  EXPECT_TRUE(details["cgroup_memory_limit_bytes"].is_null());
  EXPECT_EQ(details["memory_available_bytes"], 23409484 * kKiB);
}

TEST(CpuFixture, TwoSocketSapphireRapids) {
  mlh::DeviceInfo d = probe_fixture("xeon_spr_2socket");
  expect_common(d);
  EXPECT_EQ(d.name, "Intel(R) Xeon(R) Platinum 8480+");
  EXPECT_EQ(d.vendor, "GenuineIntel");
  EXPECT_EQ(d.logical_units, 8);
  EXPECT_EQ(d.compute_units, 4);  // core ids repeat per socket: (package, core) pairs count
  EXPECT_EQ(d.recommended_threads, 4);
  EXPECT_EQ(d.memory_total_bytes, 65842256 * kKiB);
  EXPECT_EQ(d.memory_free_bytes, 61234988 * kKiB);
  EXPECT_EQ(d.features,
            "sse4_2,avx,avx2,fma,avx512f,avx512bw,avx512vl,avx512_vnni,avx512_bf16,avx512_fp16,amx_tile,amx_bf16,"
            "amx_int8");
  EXPECT_TRUE(d.fast_precisions & MLH_PRECISION_BF16);
  EXPECT_TRUE(d.fast_precisions & MLH_PRECISION_FP16);  // avx512_fp16
  EXPECT_TRUE(d.precisions & MLH_PRECISION_FP16);
  json details = details_of(d);
  EXPECT_EQ(details["sockets"], 2);
  EXPECT_EQ(details["physical_cores"], 4);
  EXPECT_EQ(details["affinity"], "0-7");
  EXPECT_TRUE(details["cgroup_cpu_limit"].is_null()) << "cpu.max \"max 100000\" is no limit";
  EXPECT_TRUE(details["cgroup_memory_limit_bytes"].is_null());
}

TEST(CpuFixture, SlurmStepWithCpusetAndQuota) {
  mlh::DeviceInfo d = probe_fixture("xeon_spr_slurm_step");
  expect_common(d);
  EXPECT_EQ(d.logical_units, 2);  // 3 CPUs allowed, ceil(1.5) usable at once
  EXPECT_EQ(d.compute_units, 2);
  EXPECT_EQ(d.recommended_threads, 2);
  EXPECT_EQ(d.memory_total_bytes, 8 * kGiB);      // the job's memory.max, one level up
  EXPECT_EQ(d.memory_free_bytes, 6 * kGiB);       // 8 GiB limit minus 2 GiB in use
  json details = details_of(d);
  EXPECT_EQ(details["logical_cpus_usable"], 3);
  EXPECT_EQ(details["logical_cpus_online"], 8);
  EXPECT_EQ(details["physical_cores"], 2);  // CPU 4 is CPU 0's sibling
  EXPECT_EQ(details["sockets"], 1);
  EXPECT_EQ(details["affinity"], "0-1,4");
  EXPECT_DOUBLE_EQ(details["cgroup_cpu_limit"].get<double>(), 1.5);  // tighter than the job's 4
  EXPECT_EQ(details["cgroup_memory_limit_bytes"], 8 * kGiB);
  EXPECT_EQ(details["memory_available_bytes"], 61234988 * kKiB);
}

TEST(CpuFixture, SkylakeDesktopHasNoFastBf16) {
  mlh::DeviceInfo d = probe_fixture("intel_skylake_desktop");
  expect_common(d);
  EXPECT_EQ(d.name, "Intel(R) Core(TM) i7-6700K CPU @ 4.00GHz");
  EXPECT_EQ(d.features, "sse4_2,avx,avx2,fma");
  EXPECT_EQ(d.fast_precisions, kFp32Fp64);
  EXPECT_EQ(d.precisions, kFp32Fp64 | MLH_PRECISION_BF16);
  EXPECT_EQ(d.logical_units, 8);
  EXPECT_EQ(d.compute_units, 4);
  EXPECT_EQ(d.memory_total_bytes, 32817152 * kKiB);
  EXPECT_EQ(d.memory_free_bytes, 27652116 * kKiB);
  json details = details_of(d);
  EXPECT_EQ(details["sockets"], 1);
  EXPECT_TRUE(details["cgroup_cpu_limit"].is_null()) << "v1 quota -1";
  EXPECT_TRUE(details["cgroup_memory_limit_bytes"].is_null()) << "v1 'unlimited' is a huge number";
}

TEST(CpuFixture, Graviton3NeoverseV1) {
  mlh::DeviceInfo d = probe_fixture("arm_graviton3");
  expect_common(d);
  EXPECT_EQ(d.name, "Neoverse-V1");
  EXPECT_EQ(d.vendor, "ARM");
  EXPECT_EQ(d.features, "neon,asimdhp,sve,bf16,i8mm");
  EXPECT_EQ(d.fast_precisions, kFp32Fp64 | MLH_PRECISION_BF16 | MLH_PRECISION_FP16);
  EXPECT_EQ(d.logical_units, 8);
  EXPECT_EQ(d.compute_units, 8);
  EXPECT_EQ(d.memory_total_bytes, 15980876 * kKiB);
  json details = details_of(d);
  EXPECT_EQ(details["architecture"], "aarch64");
  EXPECT_EQ(details["sockets"], 1);
  EXPECT_TRUE(details["cgroup_cpu_limit"].is_null());
}

TEST(CpuFixture, EverythingMissing) {
  const TempDir empty;
  mlh::DeviceInfo d = mlh::cpu::probe_cpu(mlh::cpu::read_snapshot(empty.str()));

  expect_common(d);
  EXPECT_EQ(d.name, "unknown CPU");
  EXPECT_EQ(d.vendor, "");
  EXPECT_EQ(d.logical_units, MLH_UNKNOWN);
  EXPECT_EQ(d.compute_units, MLH_UNKNOWN);
  EXPECT_EQ(d.recommended_threads, MLH_UNKNOWN);
  EXPECT_EQ(d.memory_total_bytes, MLH_UNKNOWN);
  EXPECT_EQ(d.memory_free_bytes, MLH_UNKNOWN);
  EXPECT_EQ(d.features, "");
  EXPECT_EQ(d.fast_precisions, kFp32Fp64);
  json details = details_of(d);
  for (const char* key : {"architecture", "sockets", "physical_cores", "logical_cpus_online", "logical_cpus_usable",
                          "affinity", "cgroup_cpu_limit", "cgroup_memory_limit_bytes", "memory_available_bytes"}) {
    ASSERT_TRUE(details.contains(key)) << key;
    EXPECT_TRUE(details[key].is_null()) << key;
  }
}

TEST(CpuFixture, MalformedFilesFallBack) {
  mlh::DeviceInfo d = probe_fixture("malformed");
  expect_common(d);
  EXPECT_EQ(d.name, "Intel(R) Xeon(R) CPU E3-1230 v6 @ 3.50GHz");
  // The affinity list is garbage, so the online CPUs count.
  EXPECT_EQ(d.logical_units, 4);
  // cpu1's core_id "x", cpu2's missing package and cpu3's empty core_id come from
  // cpuinfo's "physical id"/"core id": 2 cores with 2 threads each.
  EXPECT_EQ(d.compute_units, 2);
  EXPECT_EQ(d.memory_total_bytes, 16318412 * kKiB);
  EXPECT_EQ(d.memory_free_bytes, MLH_UNKNOWN) << "a truncated MemFree must not pass for 84 bytes";
  json details = details_of(d);
  EXPECT_EQ(details["affinity"], "0-3");
  EXPECT_EQ(details["sockets"], 1);
  EXPECT_TRUE(details["cgroup_cpu_limit"].is_null()) << "\"max abc\"";
  EXPECT_TRUE(details["cgroup_memory_limit_bytes"].is_null()) << "\"-5\"";
  EXPECT_TRUE(details["architecture"].is_null());
}

TEST(CpuSnapshotReader, FindsCgroupFilesOfEveryLevel) {
  mlh::cpu::SystemSnapshot s = mlh::cpu::read_snapshot(std::string(MLH_CPU_FIXTURE_DIR) + "/xeon_spr_slurm_step");
  // step_0, job_4242, slurmstepd.scope, system.slice and the mount point itself.
  ASSERT_EQ(s.cgroups.size(), 5u);
  EXPECT_EQ(s.cgroups[0].cpu_max, "150000 100000\n");
  EXPECT_EQ(s.cgroups[1].memory_max, "8589934592\n");
  EXPECT_FALSE(s.cgroups[4].cpu_max.has_value()) << "the root cgroup has no cpu.max";
  EXPECT_EQ(s.affinity, "0-1,4");
  EXPECT_EQ(s.topology.size(), 8u);
  EXPECT_EQ(s.machine, "x86_64");
}

TEST(CpuSnapshotReader, ReadsV1HierarchiesOnHybridHosts) {
  mlh::cpu::SystemSnapshot s = mlh::cpu::read_snapshot(std::string(MLH_CPU_FIXTURE_DIR) + "/intel_skylake_desktop");
  // memory: session-2.scope up to the memory mount; cpu: user.slice and the cpu mount.
  ASSERT_EQ(s.cgroups.size(), 4u);
  EXPECT_EQ(s.cgroups[0].memory_usage_in_bytes, "2932629504\n");
  EXPECT_EQ(s.cgroups[3].memory_usage_in_bytes, "5180489728\n");
  EXPECT_EQ(s.cgroups[0].cpu_cfs_quota_us, "-1\n");
  EXPECT_EQ(s.cgroups[1].cpu_cfs_period_us, "100000\n");
  EXPECT_FALSE(s.cgroups[2].cpu_cfs_quota_us.has_value());
}

}  // namespace
