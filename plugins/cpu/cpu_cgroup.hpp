// Where a process's cgroup limits live, worked out from /proc/<pid>/cgroup and
// /proc/<pid>/mountinfo. Pure text in, paths out, so hybrid v1/v2 hosts, containers and
// cgroup namespaces can be tested from recordings.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mlh::cpu {

// Each list holds the process's cgroup directory and its ancestors up to the hierarchy's
// mount point, innermost first; it is empty when that hierarchy is not mounted or the
// process is not in it.
struct CgroupDirs {
  std::vector<std::string> v2;         // the unified hierarchy
  std::vector<std::string> v1_cpu;     // the v1 hierarchy with the "cpu" controller
  std::vector<std::string> v1_memory;  // the v1 hierarchy with the "memory" controller
};

CgroupDirs find_cgroup_dirs(std::string_view proc_cgroup, std::string_view mountinfo);

}  // namespace mlh::cpu
