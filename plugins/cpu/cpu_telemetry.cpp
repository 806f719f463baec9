#include "cpu_telemetry.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <string>

#include "cpu_file.hpp"
#include "cpu_text.hpp"

namespace mlh::cpu {
namespace {

// CPU times advance in clock ticks (10 ms); a shorter window would be mostly rounding.
constexpr double kMinWindowSeconds = 0.1;

double ticks_per_second() {
  long ticks = ::sysconf(_SC_CLK_TCK);
  return ticks > 0 ? static_cast<double>(ticks) : 100.0;
}

// Average use since the process started: its CPU time over its age, both from /proc.
std::optional<double> lifetime_utilization(const ProcessTimes& times) {
  std::optional<std::string> uptime_text = read_file("/proc/uptime");
  std::vector<std::string_view> fields = uptime_text ? words(*uptime_text) : std::vector<std::string_view>{};
  if (fields.empty()) return std::nullopt;
  double uptime = 0;  // from_chars, unlike stod, ignores the host's locale
  auto [end, ec] = std::from_chars(fields[0].data(), fields[0].data() + fields[0].size(), uptime);
  if (ec != std::errc() || end != fields[0].data() + fields[0].size()) return std::nullopt;
  double age = uptime - static_cast<double>(times.start_ticks) / ticks_per_second();
  if (age <= 0) return 0.0;
  return static_cast<double>(times.cpu_ticks) / ticks_per_second() / age * 100.0;
}

std::optional<int64_t> resident_bytes(int64_t pid) {
  std::optional<std::string> statm = read_file("/proc/" + std::to_string(pid) + "/statm");
  std::vector<std::string_view> fields = statm ? words(*statm) : std::vector<std::string_view>{};
  std::optional<int64_t> pages = fields.size() >= 2 ? parse_int(fields[1]) : std::nullopt;
  long page_size = ::sysconf(_SC_PAGESIZE);
  if (!pages || *pages < 0 || page_size <= 0) return std::nullopt;
  return *pages * page_size;
}

}  // namespace

std::optional<ProcessTimes> parse_process_stat(std::string_view stat) {
  // "pid (comm) state ppid ...": fields after the last ')' start with state (field 3).
  size_t close = stat.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::vector<std::string_view> fields = words(stat.substr(close + 1));
  // utime, stime and starttime are fields 14, 15 and 22 of proc(5); state is fields[0].
  if (fields.size() < 20) return std::nullopt;
  std::optional<int64_t> utime = parse_int(fields[11]), stime = parse_int(fields[12]), start = parse_int(fields[19]);
  if (!utime || !stime || !start || *utime < 0 || *stime < 0 || *start < 0) return std::nullopt;
  return ProcessTimes{*utime + *stime, *start};
}

TelemetrySample ProcessMonitor::sample(int64_t pid) {
  std::optional<std::string> stat = pid > 0 ? read_file("/proc/" + std::to_string(pid) + "/stat") : std::nullopt;
  if (!stat) {
    previous_.erase(pid);
    throw Error(MLH_ERR_INVALID_ARGUMENT, "no process " + std::to_string(pid));
  }
  std::optional<ProcessTimes> times = parse_process_stat(*stat);
  if (!times) throw Error(MLH_ERR_IO, "cannot parse /proc/" + std::to_string(pid) + "/stat");

  TelemetrySample sample;
  auto now = std::chrono::steady_clock::now();
  auto it = previous_.find(pid);
  if (it != previous_.end() && it->second.start_ticks == times->start_ticks) {
    Previous& previous = it->second;
    double window = std::chrono::duration<double>(now - previous.at).count();
    if (window >= kMinWindowSeconds) {
      int64_t busy_ticks = std::max<int64_t>(0, times->cpu_ticks - previous.cpu_ticks);
      double busy = static_cast<double>(busy_ticks) / ticks_per_second();
      previous = {times->start_ticks, times->cpu_ticks, now, busy / window * 100.0};
    }
    sample.utilization_percent = previous.utilization_percent;
  } else {
    sample.utilization_percent = lifetime_utilization(*times);
    previous_[pid] = {times->start_ticks, times->cpu_ticks, now, sample.utilization_percent};
  }

  sample.memory_used_bytes = resident_bytes(pid);
  if (std::optional<std::string> meminfo = read_file("/proc/meminfo"))
    sample.memory_total_bytes = meminfo_bytes(*meminfo, "MemTotal");
  return sample;
}

}  // namespace mlh::cpu
