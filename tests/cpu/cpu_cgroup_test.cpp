// Finding the cgroup directories that hold a process's limits.
#include <gtest/gtest.h>

#include "cpu_cgroup.hpp"

namespace {

using mlh::cpu::find_cgroup_dirs;
using Dirs = std::vector<std::string>;

constexpr const char* kV2Mount =
    "28 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n"
    "31 22 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate\n";

TEST(CgroupDirs, V2WalksUpToTheMountPoint) {
  mlh::cpu::CgroupDirs dirs = find_cgroup_dirs("0::/system.slice/job.scope\n", kV2Mount);
  EXPECT_EQ(dirs.v2, (Dirs{"/sys/fs/cgroup/system.slice/job.scope", "/sys/fs/cgroup/system.slice", "/sys/fs/cgroup"}));
  EXPECT_TRUE(dirs.v1_cpu.empty());
  EXPECT_TRUE(dirs.v1_memory.empty());
}

TEST(CgroupDirs, RootCgroupIsTheMountPoint) {
  EXPECT_EQ(find_cgroup_dirs("0::/\n", kV2Mount).v2, Dirs{"/sys/fs/cgroup"});
}

TEST(CgroupDirs, PathOutsideTheNamespaceMeansTheMountPoint) {
  // A process moved out of its cgroup namespace's root sees "/../..".
  EXPECT_EQ(find_cgroup_dirs("0::/../../other.slice\n", kV2Mount).v2, Dirs{"/sys/fs/cgroup"});
}

TEST(CgroupDirs, V1ContainerWithMountedSubtree) {
  // Docker without cgroup namespaces: the container's own cgroup is mounted at the
  // controller's mount point, and /proc/self/cgroup shows the host-side path.
  const char* mountinfo =
      "700 690 0:30 /docker/abc123 /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory\n"
      "701 690 0:31 /docker/abc123 /sys/fs/cgroup/cpu,cpuacct ro,nosuid - cgroup cgroup rw,cpu,cpuacct\n";
  const char* proc_cgroup = "6:memory:/docker/abc123\n3:cpu,cpuacct:/docker/abc123\n";
  mlh::cpu::CgroupDirs dirs = find_cgroup_dirs(proc_cgroup, mountinfo);
  EXPECT_EQ(dirs.v1_memory, Dirs{"/sys/fs/cgroup/memory"});
  EXPECT_EQ(dirs.v1_cpu, Dirs{"/sys/fs/cgroup/cpu,cpuacct"});
  EXPECT_TRUE(dirs.v2.empty());
}

TEST(CgroupDirs, ControllerNamesMatchExactly) {
  // "cpuacct" and "cpuset" are not "cpu".
  const char* mountinfo =
      "33 31 0:30 / /sys/fs/cgroup/cpuacct rw - cgroup cgroup rw,cpuacct\n"
      "34 31 0:31 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n";
  EXPECT_TRUE(find_cgroup_dirs("2:cpuacct:/a\n3:cpuset:/a\n", mountinfo).v1_cpu.empty());
}

TEST(CgroupDirs, MissingOrGarbageInputGivesNothing) {
  for (const char* proc_cgroup : {"", "garbage", "0::relative/path", "::::"}) {
    mlh::cpu::CgroupDirs dirs = find_cgroup_dirs(proc_cgroup, kV2Mount);
    EXPECT_TRUE(dirs.v2.empty()) << proc_cgroup;
  }
  EXPECT_TRUE(find_cgroup_dirs("0::/a\n", "not a mountinfo line\n").v2.empty());
}

}  // namespace
