// The raw system files the CPU probe looks at, captured in one struct so that the probe
// logic (cpu_probe.hpp) runs the same on the live system and on recorded fixtures.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlh::cpu {

// The text of one file; nullopt when it is missing or unreadable. Contents are kept raw:
// judging whether they make sense is the probe's job, so malformed recordings test it.
using FileText = std::optional<std::string>;

// /sys/devices/system/cpu/cpuN/topology of one logical CPU.
struct CpuTopologyFiles {
  FileText physical_package_id;
  FileText core_id;
};

// The limit files of one cgroup directory. v2 and v1 names are both kept because hybrid
// hosts put some controllers in v1 hierarchies and others in the v2 one.
struct CgroupFiles {
  FileText cpu_max;                // v2 cpu.max: "<quota|max> <period>"
  FileText memory_max;             // v2 memory.max: "<bytes|max>"
  FileText memory_current;         // v2 memory.current
  FileText cpu_cfs_quota_us;       // v1: -1 for no limit
  FileText cpu_cfs_period_us;      // v1
  FileText memory_limit_in_bytes;  // v1: a huge number for no limit
  FileText memory_usage_in_bytes;  // v1
};

struct SystemSnapshot {
  FileText cpuinfo;   // /proc/cpuinfo
  FileText meminfo;   // /proc/meminfo
  FileText affinity;  // Cpus_allowed_list of /proc/self/status, e.g. "0-3,8"
  FileText online;    // /sys/devices/system/cpu/online
  std::map<int, CpuTopologyFiles> topology;  // by logical CPU number
  // The process's cgroup directory and each ancestor up to the hierarchy's visible root,
  // innermost first, since a limit on any ancestor applies too. With v1 the cpu and
  // memory hierarchies differ; their levels are merged by depth, which is harmless
  // because each resource is judged on its own.
  std::vector<CgroupFiles> cgroups;
  std::string machine;  // uname machine ("x86_64", "aarch64"); empty when unknown
};

// Reads the snapshot from the file tree under `root`: "/" for the live system, a fixture
// directory in tests. Missing or unreadable files become nullopt; it never throws for them.
SystemSnapshot read_snapshot(const std::string& root);

}  // namespace mlh::cpu
