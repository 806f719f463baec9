// Turns a SystemSnapshot into the CPU device record. Pure: no system access, so every
// rule here is tested on recorded machines (tests/fixtures/cpu).
#pragma once

#include <mlh/plugin.hpp>

#include "cpu_snapshot.hpp"

namespace mlh::cpu {

// The one CPU device. Always available; figures the snapshot cannot tell are unknown.
//  - logical_units: CPUs in affinity ∩ online, capped by ceil(cgroup CPU quota);
//  - compute_units: distinct (package, core) pairs among those CPUs, capped the same way,
//    and recommended_threads equal to it: one intra-op thread per usable physical core;
//  - memory: MemTotal capped by the cgroup memory limit; MemAvailable capped by the
//    cgroup headroom (limit minus usage at every level);
//  - details_json holds the figures before the quota cap (sockets, physical_cores,
//    logical_cpus_online, logical_cpus_usable, and affinity: the usable CPUs as a list
//    like "0-3,8"), cgroup_cpu_limit, cgroup_memory_limit_bytes,
//    memory_available_bytes (MemAvailable) and architecture; null where unknown.
DeviceInfo probe_cpu(const SystemSnapshot& snapshot);

}  // namespace mlh::cpu
