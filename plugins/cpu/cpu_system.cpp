// Reads a SystemSnapshot from a file tree: the live system at "/", or a recorded fixture.
#include <dirent.h>
#include <sys/utsname.h>

#include <algorithm>
#include <memory>
#include <utility>

#include "cpu_cgroup.hpp"
#include "cpu_file.hpp"
#include "cpu_snapshot.hpp"
#include "cpu_text.hpp"

namespace mlh::cpu {
namespace {

// Absolute system paths, resolved under a root directory.
class Tree {
 public:
  explicit Tree(std::string root) : root_(std::move(root)) {
    while (!root_.empty() && root_.back() == '/') root_.pop_back();
  }
  bool is_live() const { return root_.empty(); }
  std::string path(const std::string& absolute) const { return root_ + absolute; }
  FileText read(const std::string& absolute) const { return read_file(path(absolute)); }

 private:
  std::string root_;  // "" for "/"
};

// Every cpuN directory, online or not: offline CPUs simply have no topology files.
std::map<int, CpuTopologyFiles> read_topology(const Tree& tree) {
  std::map<int, CpuTopologyFiles> topology;
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(tree.path("/sys/devices/system/cpu").c_str()), ::closedir);
  if (!dir) return topology;
  while (const dirent* entry = ::readdir(dir.get())) {
    std::string_view name = entry->d_name;
    if (name.size() <= 3 || name.substr(0, 3) != "cpu") continue;
    std::optional<int64_t> cpu = parse_int(name.substr(3));
    if (!cpu || *cpu < 0 || *cpu > 65535) continue;
    std::string base = "/sys/devices/system/cpu/" + std::string(name) + "/topology/";
    topology[static_cast<int>(*cpu)] = {tree.read(base + "physical_package_id"), tree.read(base + "core_id")};
  }
  return topology;
}

std::vector<CgroupFiles> read_cgroups(const Tree& tree) {
  FileText proc_cgroup = tree.read("/proc/self/cgroup");
  FileText mountinfo = tree.read("/proc/self/mountinfo");
  if (!proc_cgroup || !mountinfo) return {};
  CgroupDirs dirs = find_cgroup_dirs(*proc_cgroup, *mountinfo);
  std::vector<CgroupFiles> levels(std::max({dirs.v2.size(), dirs.v1_cpu.size(), dirs.v1_memory.size()}));
  for (size_t i = 0; i < dirs.v2.size(); ++i) {
    levels[i].cpu_max = tree.read(dirs.v2[i] + "/cpu.max");
    levels[i].memory_max = tree.read(dirs.v2[i] + "/memory.max");
    levels[i].memory_current = tree.read(dirs.v2[i] + "/memory.current");
  }
  for (size_t i = 0; i < dirs.v1_cpu.size(); ++i) {
    levels[i].cpu_cfs_quota_us = tree.read(dirs.v1_cpu[i] + "/cpu.cfs_quota_us");
    levels[i].cpu_cfs_period_us = tree.read(dirs.v1_cpu[i] + "/cpu.cfs_period_us");
  }
  for (size_t i = 0; i < dirs.v1_memory.size(); ++i) {
    levels[i].memory_limit_in_bytes = tree.read(dirs.v1_memory[i] + "/memory.limit_in_bytes");
    levels[i].memory_usage_in_bytes = tree.read(dirs.v1_memory[i] + "/memory.usage_in_bytes");
  }
  return levels;
}

std::string read_machine(const Tree& tree) {
  // Recorded trees carry the architecture in this file; older kernels lack it, so the
  // live system falls back to uname(2).
  if (FileText arch = tree.read("/proc/sys/kernel/arch")) return std::string(trim(*arch));
  utsname names{};
  if (tree.is_live() && ::uname(&names) == 0) return names.machine;
  return {};
}

}  // namespace

SystemSnapshot read_snapshot(const std::string& root) {
  Tree tree(root);
  SystemSnapshot s;
  s.cpuinfo = tree.read("/proc/cpuinfo");
  s.meminfo = tree.read("/proc/meminfo");
  if (FileText status = tree.read("/proc/self/status")) s.affinity = field_value(*status, "Cpus_allowed_list");
  s.online = tree.read("/sys/devices/system/cpu/online");
  s.topology = read_topology(tree);
  s.cgroups = read_cgroups(tree);
  s.machine = read_machine(tree);
  return s;
}

}  // namespace mlh::cpu
