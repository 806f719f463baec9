#include "run/memory_kill.hpp"

#include <fstream>
#include <sstream>

#include "probe/ranking.hpp"

namespace mlhost {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path cgroup_memory_events() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("0::", 0) == 0) {  // cgroup v2: "0::/user.slice/..."
      std::string relative = line.substr(3);
      if (!relative.empty() && relative[0] == '/') relative.erase(0, 1);
      const fs::path events = fs::path("/sys/fs/cgroup") / relative / "memory.events";
      std::error_code ec;
      return fs::exists(events, ec) ? events : fs::path();
    }
  return {};
}

std::optional<int64_t> oom_kill_count(const fs::path& memory_events) {
  if (memory_events.empty()) return std::nullopt;
  std::ifstream in(memory_events);
  std::string key;
  int64_t value = 0;
  while (in >> key >> value)
    if (key == "oom_kill") return value;
  return std::nullopt;
}

std::optional<std::string> memory_kill_explanation(std::optional<int64_t> before, std::optional<int64_t> after,
                                                   const fs::path& telemetry, const json& plan,
                                                   const std::string& resume_hint, const std::string& algorithm,
                                                   bool takes_batch_size) {
  // The worker's resident memory in its last telemetry sample.
  std::optional<int64_t> last_rss;
  std::ifstream in(telemetry);
  for (std::string line; std::getline(in, line);) {
    const json sample = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (sample.is_object() && sample.value("memory_used_bytes", json()).is_number_integer())
      last_rss = sample["memory_used_bytes"].get<int64_t>();
  }
  const int64_t total = plan.value("memory_total_bytes", json()).is_number_integer() ? plan["memory_total_bytes"].get<int64_t>() : 0;
  const bool oom_killer = before && after && *after > *before;
  const bool near_full = last_rss && total > 0 && *last_rss >= total * 8 / 10;
  if (!oom_killer && !near_full) return std::nullopt;

  std::string text = "likely out of memory: ";
  if (oom_killer) text += "the kernel's OOM killer ended a process of this run's cgroup (memory.events oom_kill " +
                          std::to_string(*before) + " -> " + std::to_string(*after) + ")";
  if (last_rss) {
    if (oom_killer) text += "; ";
    text += "the worker's resident memory was " + format_bytes(*last_rss) +
            (total > 0 ? " of " + format_bytes(total) : std::string()) + " a moment before";
  }
  if (!takes_batch_size)  // protonet's episodes and ppo's rollouts are sized by their own config keys
    return text + ". Resume with less memory a step: " + resume_hint + " with smaller sizes in " + algorithm +
           "'s config (--set KEY=VALUE; 'host --describe " + algorithm + "' lists them), or a lower memory_fraction";
  text += ". Resume with a smaller batch: " + resume_hint;
  if (plan.value("batch_size", json()).is_number_integer() && plan["batch_size"].get<int64_t>() > 1)
    text += " --batch-size " + std::to_string(plan["batch_size"].get<int64_t>() / 2);
  else
    text += " --batch-size N";
  return text + " (or --batch-size auto, or a lower memory_fraction)";
}

}  // namespace mlhost
