// The cgroup limits that apply to the process: the tightest over its cgroup and every
// ancestor, read from v2 files where present and v1 files otherwise.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "cpu_snapshot.hpp"

namespace mlh::cpu {

struct CgroupLimits {
  std::optional<double> cpus;                  // CPU quota / period, e.g. 1.5
  std::optional<int64_t> memory_bytes;         // memory limit
  std::optional<int64_t> memory_headroom_bytes;  // limit minus usage, at the tightest level
};

// Unreadable or malformed files count as "no limit" at their level.
CgroupLimits cgroup_limits(const std::vector<CgroupFiles>& levels);

}  // namespace mlh::cpu
