#include "cpu_probe.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "cpu_cpuinfo.hpp"
#include "cpu_limits.hpp"
#include "cpu_text.hpp"

namespace mlh::cpu {
namespace {

struct CpuSets {
  std::optional<std::set<int>> online;
  std::optional<std::set<int>> usable;  // online CPUs the process may run on
};

CpuSets cpu_sets(const SystemSnapshot& s, const Cpuinfo& info) {
  CpuSets sets;
  sets.online = s.online ? parse_cpu_list(*s.online) : std::nullopt;
  if (!sets.online && !info.processors.empty()) {
    // cpuinfo lists exactly the online CPUs.
    sets.online.emplace();
    for (const auto& processor : info.processors) sets.online->insert(processor.first);
  }
  std::optional<std::set<int>> affinity = s.affinity ? parse_cpu_list(*s.affinity) : std::nullopt;
  if (sets.online && affinity) {
    std::set<int> both;
    std::set_intersection(affinity->begin(), affinity->end(), sets.online->begin(), sets.online->end(),
                          std::inserter(both, both.end()));
    // Files that disagree entirely (read at different moments) leave the affinity: it is
    // what the scheduler enforces.
    sets.usable = both.empty() ? *affinity : both;
  } else {
    sets.usable = affinity ? affinity : sets.online;
  }
  return sets;
}

// Where a CPU sits: sysfs topology first, cpuinfo "physical id"/"core id" second.
struct Place {
  std::optional<int64_t> package, core;
};

Place place_of(int cpu, const SystemSnapshot& s, const Cpuinfo& info) {
  Place place;
  if (auto it = s.topology.find(cpu); it != s.topology.end()) {
    const CpuTopologyFiles& files = it->second;
    if (files.physical_package_id) place.package = parse_int(*files.physical_package_id);
    if (files.core_id) place.core = parse_int(*files.core_id);
  }
  if (auto it = info.processors.find(cpu); it != info.processors.end()) {
    const CpuinfoBlock& block = info.blocks[it->second];
    if (!place.package || *place.package < 0) place.package = int_value(block, "physical id");
    if (!place.core || *place.core < 0) place.core = int_value(block, "core id");
  }
  // Some ARM firmware reports -1: not known.
  if (place.package && *place.package < 0) place.package.reset();
  if (place.core && *place.core < 0) place.core.reset();
  return place;
}

struct Topology {
  int physical_cores = 0;
  std::optional<int> sockets;  // unknown when no CPU's package is known
};

Topology count_topology(const std::set<int>& cpus, const SystemSnapshot& s, const Cpuinfo& info) {
  std::set<std::pair<int64_t, int64_t>> cores;
  std::set<int64_t> packages;
  Topology t;
  for (int cpu : cpus) {
    Place place = place_of(cpu, s, info);
    if (place.package) packages.insert(*place.package);
    if (place.core)
      cores.emplace(place.package.value_or(-1), *place.core);
    else
      ++t.physical_cores;  // nothing known: count the CPU as a core of its own
  }
  t.physical_cores += static_cast<int>(cores.size());
  if (!packages.empty()) t.sockets = static_cast<int>(packages.size());
  return t;
}

template <class T>
std::optional<T> min_known(std::optional<T> a, std::optional<T> b) {
  if (a && b) return std::min(*a, *b);
  return a ? a : b;
}

uint32_t fast_precisions(const std::vector<std::string>& features) {
  auto has = [&](const char* f) { return std::find(features.begin(), features.end(), f) != features.end(); };
  uint32_t fast = MLH_PRECISION_FP32 | MLH_PRECISION_FP64;
  if (has("avx512_bf16") || has("amx_bf16") || has("bf16")) fast |= MLH_PRECISION_BF16;
  if (has("avx512_fp16") || has("amx_fp16") || has("asimdhp")) fast |= MLH_PRECISION_FP16;
  return fast;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

struct Memory {
  std::optional<int64_t> total, free;
  std::optional<int64_t> available;  // MemAvailable as the kernel reports it
};

Memory memory(const SystemSnapshot& s, const CgroupLimits& limits) {
  Memory m;
  std::optional<int64_t> ram = s.meminfo ? meminfo_bytes(*s.meminfo, "MemTotal") : std::nullopt;
  m.available = s.meminfo ? meminfo_bytes(*s.meminfo, "MemAvailable") : std::nullopt;
  // Kernels before 3.14 have no MemAvailable; MemFree underestimates, the safe side.
  if (!m.available && s.meminfo) m.available = meminfo_bytes(*s.meminfo, "MemFree");
  m.total = min_known(ram, limits.memory_bytes);
  m.free = min_known(m.available, limits.memory_headroom_bytes);
  if (m.free && m.total) m.free = std::min(*m.free, *m.total);
  return m;
}

template <class T>
nlohmann::ordered_json or_null(const std::optional<T>& value) {
  return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json size_or_null(const std::optional<std::set<int>>& cpus) {
  return cpus ? nlohmann::ordered_json(cpus->size()) : nlohmann::ordered_json(nullptr);
}

std::string details_json(const SystemSnapshot& s, const CpuSets& sets, const std::optional<Topology>& topology,
                         const CgroupLimits& limits, const Memory& memory) {
  nlohmann::ordered_json details;
  details["architecture"] = s.machine.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(s.machine);
  details["sockets"] = or_null(topology ? topology->sockets : std::nullopt);
  details["physical_cores"] = topology ? nlohmann::ordered_json(topology->physical_cores) : nullptr;
  details["logical_cpus_online"] = size_or_null(sets.online);
  details["logical_cpus_usable"] = size_or_null(sets.usable);
  details["affinity"] = sets.usable ? nlohmann::ordered_json(format_cpu_list(*sets.usable)) : nullptr;
  details["cgroup_cpu_limit"] = or_null(limits.cpus);
  details["cgroup_memory_limit_bytes"] = or_null(limits.memory_bytes);
  details["memory_available_bytes"] = or_null(memory.available);
  return details.dump();
}

}  // namespace

DeviceInfo probe_cpu(const SystemSnapshot& s) {
  Cpuinfo info = parse_cpuinfo(s.cpuinfo.value_or(""));
  CpuSets sets = cpu_sets(s, info);
  CgroupLimits limits = cgroup_limits(s.cgroups);

  DeviceInfo d;
  d.device_class = MLH_DEVICE_CLASS_CPU;
  d.index = 0;
  d.available = true;
  d.kind = "cpu";
  d.torch_device = "cpu";
  d.name = model_name(info);
  if (d.name.empty()) d.name = "unknown CPU";
  d.vendor = vendor_name(info);

  std::optional<Topology> topology;
  if (sets.usable) {
    topology = count_topology(*sets.usable, s, info);
    int quota_cap = limits.cpus ? std::max(1, static_cast<int>(std::ceil(*limits.cpus))) : INT32_MAX;
    d.logical_units = std::min(static_cast<int>(sets.usable->size()), quota_cap);
    d.compute_units = std::min(topology->physical_cores, d.logical_units);
    d.recommended_threads = d.compute_units;
  }

  Memory m = memory(s, limits);
  d.memory_total_bytes = m.total.value_or(MLH_UNKNOWN);
  d.memory_free_bytes = m.free.value_or(MLH_UNKNOWN);
  d.memory_unified = true;

  std::vector<std::string> features = training_features(info);
  d.features = join(features);
  d.fast_precisions = fast_precisions(features);
  // bf16 runs everywhere (emulated where the ISA lacks it); fp16 only where it is native.
  d.precisions = MLH_PRECISION_FP32 | MLH_PRECISION_FP64 | MLH_PRECISION_BF16 | d.fast_precisions;

  d.details_json = details_json(s, sets, topology, limits, m);
  return d;
}

}  // namespace mlh::cpu
