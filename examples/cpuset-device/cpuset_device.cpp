// The smallest useful device plugin: this machine's CPU restricted to a chosen set of
// cores, for sharing a machine between runs. MLH_CPUSET names the cores ("0-3,6"); unset,
// the device is every core this process may run on.
//
//   probe      one device, "cpuset:0", torch device "cpu", with the set's size as its
//              compute units and thread count; unavailable (with the reason) when the set
//              is malformed or names no core this process may use
//   prepare    pins the run's OpenMP threads to the set (GOMP_CPU_AFFINITY), before LibTorch
//              starts in the worker; the thread counts and the allocator are the plan's,
//              which the host sets for every device (the set's size is the recommendation)
//   telemetry  the set's busy share from /proc/stat and the worker's resident memory
//
// It uses only the SDK's headers: the C ABI through the C++ helper mlh/plugin.hpp.
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <mlh/plugin.hpp>

namespace {

// Parses "0-3,6" into {0,1,2,3,6}. Throws mlh::Error naming the bad part.
std::set<int> parse_cpu_list(const std::string& text) {
  std::set<int> cores;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    const size_t dash = part.find('-');
    try {
      const int first = std::stoi(part.substr(0, dash));
      int last = first;
      if (dash != std::string::npos) last = std::stoi(part.substr(dash + 1));
      if (first < 0 || last < first || last > 4095) throw std::out_of_range(part);
      for (int c = first; c <= last; ++c) cores.insert(c);
    } catch (const std::exception&) {
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "MLH_CPUSET: '" + part + "' is not a core or a range like 0-3");
    }
  }
  if (cores.empty()) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "MLH_CPUSET is empty");
  return cores;
}

std::set<int> allowed_cores() {
  cpu_set_t mask;
  std::set<int> cores;
  if (sched_getaffinity(0, sizeof(mask), &mask) != 0) return cores;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &mask)) cores.insert(c);
  return cores;
}

// A value in kB from a /proc file such as /proc/meminfo ("MemTotal:  123 kB"), in bytes.
int64_t proc_kb_field(const std::string& file, const std::string& field) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line))
    if (line.compare(0, field.size() + 1, field + ":") == 0) return std::stoll(line.substr(field.size() + 1)) * 1024;
  return MLH_UNKNOWN;
}

std::string join(const std::set<int>& cores, const char* sep) {
  std::string s;
  for (int c : cores) s += (s.empty() ? "" : sep) + std::to_string(c);
  return s;
}

class CpusetDevice : public mlh::DevicePlugin {
 public:
  std::vector<mlh::DeviceInfo> probe() override {
    mlh::DeviceInfo d;
    d.device_class = MLH_DEVICE_CLASS_CPU;
    d.kind = "cpuset";
    d.torch_device = "cpu";
    d.vendor = "example";
    d.memory_total_bytes = proc_kb_field("/proc/meminfo", "MemTotal");
    d.memory_free_bytes = proc_kb_field("/proc/meminfo", "MemAvailable");
    d.memory_unified = true;
    try {
      cores_ = chosen_cores();
      d.name = "CPU cores " + join(cores_, ",");
      d.compute_units = d.logical_units = d.recommended_threads = static_cast<int32_t>(cores_.size());
      d.details_json = "{\"cores\": [" + join(cores_, ", ") + "]}";
    } catch (const mlh::Error& e) {
      // A device that cannot be used is reported as such, with the reason, not dropped.
      d.name = "CPU cores (none)";
      d.available = false;
      d.unavailable_reason = e.what();
    }
    return {d};
  }

  std::vector<mlh::EnvVar> prepare(int32_t /*device_index*/, const std::string& /*plan_json*/) override {
    const std::set<int> cores = chosen_cores();
    return {{"GOMP_CPU_AFFINITY", join(cores, " ")}, {"MLH_CPUSET_CORES", join(cores, ",")}};
  }

  // Busy share of the set since the previous sample (the host keeps this plugin loaded in
  // its sampler process and asks every few seconds), and the worker's resident memory.
  mlh::TelemetrySample telemetry(int32_t /*device_index*/, int64_t pid) override {
    if (cores_.empty()) cores_ = chosen_cores();
    mlh::TelemetrySample t;
    int64_t busy = 0, total = 0;
    std::ifstream stat("/proc/stat");
    std::string line;
    while (std::getline(stat, line)) {
      int core = -1;
      if (std::sscanf(line.c_str(), "cpu%d", &core) != 1 || !cores_.count(core)) continue;
      std::istringstream fields(line.substr(line.find(' ')));
      int64_t v, i = 0, idle = 0, sum = 0;
      while (fields >> v) {
        sum += v;
        if (i == 3 || i == 4) idle += v;  // idle and iowait
        ++i;
      }
      busy += sum - idle;
      total += sum;
    }
    if (previous_total_ > 0 && total > previous_total_)
      t.utilization_percent = 100.0 * static_cast<double>(busy - previous_busy_) / static_cast<double>(total - previous_total_);
    previous_busy_ = busy;
    previous_total_ = total;
    const int64_t rss = proc_kb_field("/proc/" + std::to_string(pid) + "/status", "VmRSS");
    if (rss != MLH_UNKNOWN) t.memory_used_bytes = rss;
    const int64_t mem = proc_kb_field("/proc/meminfo", "MemTotal");
    if (mem != MLH_UNKNOWN) t.memory_total_bytes = mem;
    return t;
  }

 private:
  static std::set<int> chosen_cores() {
    const std::set<int> allowed = allowed_cores();
    const char* env = std::getenv("MLH_CPUSET");
    if (!env) return allowed;
    std::set<int> chosen;
    for (int c : parse_cpu_list(env))
      if (allowed.count(c)) chosen.insert(c);
    if (chosen.empty())
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, std::string("MLH_CPUSET '") + env +
                                                     "' names no core this process may run on (allowed: " +
                                                     join(allowed, ",") + ")");
    return chosen;
  }

  std::set<int> cores_;
  int64_t previous_busy_ = 0, previous_total_ = 0;
};

}  // namespace

MLH_DEVICE_PLUGIN(CpusetDevice)
