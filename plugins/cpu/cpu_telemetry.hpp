// CPU use and resident memory of one process, sampled from /proc/<pid>.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mlh/plugin.hpp>
#include <optional>
#include <string_view>

namespace mlh::cpu {

// The figures of /proc/<pid>/stat that telemetry needs, in clock ticks.
struct ProcessTimes {
  int64_t cpu_ticks;    // utime + stime
  int64_t start_ticks;  // starttime, after boot
};

// nullopt when the text is not a stat line. The command name may hold spaces and ')'.
std::optional<ProcessTimes> parse_process_stat(std::string_view stat);

// Keeps the previous sample of each watched process, so that each call reports the CPU
// use since the one before.
class ProcessMonitor {
 public:
  // utilization_percent: 100 = one core busy. The first call for a process reports its
  // average since it started; later calls the average since the previous call (calls
  // closer than a few clock ticks repeat the previous figure, as the counters would
  // only show noise). memory_used_bytes: the resident set; memory_total_bytes: MemTotal.
  // Throws mlh::Error(MLH_ERR_INVALID_ARGUMENT, "no process <pid>").
  TelemetrySample sample(int64_t pid);

 private:
  struct Previous {
    int64_t start_ticks;  // tells a reused pid from the process sampled before
    int64_t cpu_ticks;
    std::chrono::steady_clock::time_point at;
    std::optional<double> utilization_percent;  // what the last call reported
  };
  std::map<int64_t, Previous> previous_;
};

}  // namespace mlh::cpu
