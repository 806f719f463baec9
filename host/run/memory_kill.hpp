// Why a worker killed outright (SIGKILL) most likely died: the kernel's OOM killer ends the
// biggest process when memory runs out, and the worker learns nothing. The host tells from
// its cgroup's OOM-kill count (memory.events, cgroup v2) going up during the run, or from
// the worker's resident memory in its last telemetry sample being near the machine's memory,
// and says how to resume with a smaller batch.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace mlhost {

// This process's cgroup v2 memory.events file (from /proc/self/cgroup); empty when there is
// none (cgroup v1, no /sys/fs/cgroup).
std::filesystem::path cgroup_memory_events();

// The oom_kill count in a memory.events file; nothing when unreadable.
std::optional<int64_t> oom_kill_count(const std::filesystem::path& memory_events);

// The explanation to add to "killed by signal 9", or nothing when memory is not the likely
// cause. `oom_kills_before`/`after`: the counts around the run; `telemetry`: the run's
// telemetry.jsonl; `plan`: its plan (memory_total_bytes, batch_size); `resume_hint`: the
// command to resume with: a smaller --batch-size is appended where `algorithm` takes one
// (`takes_batch_size`), else the advice names its config.
std::optional<std::string> memory_kill_explanation(std::optional<int64_t> oom_kills_before,
                                                   std::optional<int64_t> oom_kills_after,
                                                   const std::filesystem::path& telemetry, const nlohmann::json& plan,
                                                   const std::string& resume_hint, const std::string& algorithm,
                                                   bool takes_batch_size);

}  // namespace mlhost
