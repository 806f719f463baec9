// `host --probe` with the real CPU plugin: the JSON report against what the test reads from
// the machine itself (affinity, cgroup limits, memory, /proc/cpuinfo).
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "cli_harness.hpp"

namespace mlhost::cli_test {
namespace {

// --- what the machine says, read independently of the CPU plugin ----------------------------

struct CgroupPaths {
  std::optional<std::string> v2;      // "0::<path>"
  std::optional<std::string> cpu_v1;  // the hierarchy whose controllers include "cpu"
  std::optional<std::string> mem_v1;  // ... "memory"
};

CgroupPaths own_cgroups() {
  CgroupPaths out;
  std::ifstream in("/proc/self/cgroup");
  for (std::string line; std::getline(in, line);) {
    const auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string id = line.substr(0, a), controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (id == "0" && controllers.empty()) {
      out.v2 = path;
      continue;
    }
    std::stringstream list(controllers);
    for (std::string c; std::getline(list, c, ',');) {
      if (c == "cpu") out.cpu_v1 = path;
      if (c == "memory") out.mem_v1 = path;
    }
  }
  return out;
}

// The cgroup folder of `path` under `mount` and each parent up to the mount itself. A path
// that does not exist under the mount (a container that sees only its own subtree) leaves
// the mount folder, which then is the process's cgroup.
std::vector<fs::path> levels(const fs::path& mount, const std::string& path) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(mount, ec)) return out;
  fs::path rel = fs::path(path).relative_path();
  for (;;) {
    const fs::path dir = rel.empty() ? mount : (mount / rel).lexically_normal();
    if (fs::is_directory(dir, ec)) out.push_back(dir);
    if (rel.empty() || rel == rel.parent_path()) break;
    rel = rel.parent_path();
  }
  if (std::find(out.begin(), out.end(), mount) == out.end()) out.push_back(mount);
  return out;
}

std::optional<std::string> first_line(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

// The smallest CPU quota (in CPUs) of the process's cgroup and its parents, if any is set.
std::optional<double> cgroup_cpu_quota() {
  const CgroupPaths cg = own_cgroups();
  std::optional<double> best;
  auto keep = [&](double v) {
    if (!best || v < *best) best = v;
  };
  std::error_code ec;
  if (cg.v2 && fs::exists("/sys/fs/cgroup/cgroup.controllers", ec)) {
    for (const fs::path& dir : levels("/sys/fs/cgroup", *cg.v2)) {
      auto line = first_line(dir / "cpu.max");
      if (!line) continue;
      std::istringstream in(*line);
      std::string quota;
      long long period = 0;
      in >> quota >> period;
      if (quota != "max" && period > 0) keep(std::stod(quota) / static_cast<double>(period));
    }
  }
  if (cg.cpu_v1) {
    for (const char* mount : {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"}) {
      for (const fs::path& dir : levels(mount, *cg.cpu_v1)) {
        auto q = first_line(dir / "cpu.cfs_quota_us"), p = first_line(dir / "cpu.cfs_period_us");
        if (!q || !p) continue;
        const long long quota = std::stoll(*q), period = std::stoll(*p);
        if (quota > 0 && period > 0) keep(static_cast<double>(quota) / static_cast<double>(period));
      }
      if (fs::exists(mount, ec)) break;
    }
  }
  return best;
}

// The smallest memory limit of the process's cgroup and its parents, if any is set.
std::optional<int64_t> cgroup_memory_limit() {
  const CgroupPaths cg = own_cgroups();
  std::optional<int64_t> best;
  auto keep = [&](int64_t v) {
    if (v > 0 && (!best || v < *best)) best = v;
  };
  std::error_code ec;
  if (cg.v2 && fs::exists("/sys/fs/cgroup/cgroup.controllers", ec)) {
    for (const fs::path& dir : levels("/sys/fs/cgroup", *cg.v2)) {
      auto line = first_line(dir / "memory.max");
      if (line && *line != "max") keep(std::stoll(*line));
    }
  }
  if (cg.mem_v1) {
    for (const fs::path& dir : levels("/sys/fs/cgroup/memory", *cg.mem_v1)) {
      auto line = first_line(dir / "memory.limit_in_bytes");
      if (!line) continue;
      const long long v = std::stoll(*line);
      if (v < (1LL << 62)) keep(v);  // v1 writes "no limit" as a huge page-aligned number
    }
  }
  return best;
}

int affinity_cpu_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return -1;
  return CPU_COUNT(&set);
}

bool cpuinfo_has_flag(const std::string& flag) {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("flags", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::istringstream words(line.substr(colon + 1));
    for (std::string w; words >> w;)
      if (w == flag) return true;
    return false;  // the first CPU's flags
  }
  return false;
}

std::vector<std::string> strings(const json& array) {
  std::vector<std::string> out;
  if (array.is_array())
    for (const auto& s : array)
      if (s.is_string()) out.push_back(s);
  return out;
}

using ProbeTest = CliTest;

TEST_F(ProbeTest, JsonReportDescribesThisMachine) {
  const json report = probe({});
  ASSERT_FALSE(report.is_discarded());
  ASSERT_TRUE(report.is_object()) << report.dump(2);

  EXPECT_EQ(report.value("schema_version", 0), 1);
  EXPECT_EQ(report["host"].value("version", ""), project_version());
  EXPECT_EQ(report["chosen"], "cpu:0") << report.dump(2);
  EXPECT_TRUE(report["error"].is_null()) << report["error"];
  EXPECT_EQ(report["request"].value("device", ""), "auto");
  EXPECT_EQ(report["platform"].value("cpu_threads_online", -1), sysconf(_SC_NPROCESSORS_ONLN));

  // The CPU plugin came from the host's own folder (found relative to the executable).
  const json* cpu_plugin = find_plugin(report, "cpu");
  ASSERT_NE(cpu_plugin, nullptr) << report.dump(2);
  EXPECT_EQ((*cpu_plugin)["status"], "ok") << cpu_plugin->dump(2);
  EXPECT_EQ((*cpu_plugin)["origin"], "default");
  EXPECT_EQ(fs::path(str((*cpu_plugin)["library"])).parent_path().lexically_normal(), default_plugin_dir());
  EXPECT_EQ(strings((*cpu_plugin)["devices"]), std::vector<std::string>{"cpu:0"});

  // cuda and mps load on this machine (no NVIDIA driver, not a Mac) and each reports one
  // unavailable device that says why.
  for (const auto& [name, why] : {std::pair<const char*, const char*>{"cuda", "libcuda.so.1"}, {"mps", "macOS 12.3"}}) {
    const json* p = find_plugin(report, name);
    ASSERT_NE(p, nullptr) << "no entry for the standard plugin " << name;
    EXPECT_EQ((*p)["status"], "ok") << p->dump(2);
    const json* d = find_device(report, std::string(name) + ":0");
    ASSERT_NE(d, nullptr) << report.dump(2);
    EXPECT_EQ((*d)["available"], false) << d->dump(2);
    EXPECT_EQ((*d)["rank"], nullptr) << d->dump(2);
    EXPECT_TRUE(contains(str((*d)["unavailable_reason"]), why)) << d->dump(2);
  }

  const json* cpu = find_device(report, "cpu:0");
  ASSERT_NE(cpu, nullptr) << report.dump(2);
  EXPECT_EQ((*cpu)["chosen"], true);
  EXPECT_EQ((*cpu)["rank"], 1);
  EXPECT_EQ((*cpu)["class"], "cpu");
  EXPECT_EQ((*cpu)["torch_device"], "cpu");
  EXPECT_EQ((*cpu)["available"], true);
  EXPECT_EQ(report["platform"]["processor"], (*cpu)["name"]);

  // Logical units: the CPUs this process may run on, capped by a cgroup CPU quota.
  const int affinity = affinity_cpu_count();
  ASSERT_GT(affinity, 0);
  int expected_logical = affinity;
  const std::optional<double> quota = cgroup_cpu_quota();
  if (quota) expected_logical = std::min(expected_logical, std::max(1, static_cast<int>(std::ceil(*quota))));
  ASSERT_TRUE((*cpu)["logical_units"].is_number_integer()) << "logical_units missing: " << cpu->dump(2);
  EXPECT_EQ((*cpu)["logical_units"].get<int>(), expected_logical)
      << "affinity " << affinity << " CPUs, cgroup quota " << (quota ? std::to_string(*quota) : "none");

  ASSERT_TRUE((*cpu)["compute_units"].is_number_integer()) << "compute_units missing: " << cpu->dump(2);
  const int compute = (*cpu)["compute_units"];
  EXPECT_GE(compute, 1);
  EXPECT_LE(compute, (*cpu)["logical_units"].get<int>());
  ASSERT_TRUE((*cpu)["recommended_threads"].is_number_integer()) << cpu->dump(2);
  EXPECT_EQ((*cpu)["recommended_threads"].get<int>(), compute);

  // Memory: physical memory, or a smaller cgroup limit.
  const double physical = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  double expected_memory = physical;
  const std::optional<int64_t> mem_limit = cgroup_memory_limit();
  if (mem_limit && static_cast<double>(*mem_limit) < expected_memory) expected_memory = static_cast<double>(*mem_limit);
  ASSERT_TRUE((*cpu)["memory_total_bytes"].is_number_integer()) << cpu->dump(2);
  const double memory = (*cpu)["memory_total_bytes"].get<double>();
  EXPECT_NEAR(memory, expected_memory, expected_memory * 0.02)
      << "physical " << physical << ", cgroup limit " << (mem_limit ? std::to_string(*mem_limit) : "none");
  if ((*cpu)["memory_free_bytes"].is_number()) {
    EXPECT_LE((*cpu)["memory_free_bytes"].get<double>(), memory);
  }

  // ISA features as /proc/cpuinfo reports them.
  const std::vector<std::string> features = strings((*cpu)["features"]);
  const bool reports_avx2 = std::find(features.begin(), features.end(), "avx2") != features.end();
  EXPECT_EQ(reports_avx2, cpuinfo_has_flag("avx2")) << "features: " << (*cpu)["features"].dump();
}

// MLH_CPU_EXTRA_FLAGS makes the cpu plugin read more features than this CPU has: how the
// suite runs as if on an Intel Xeon with AVX-512 FP16 and AMX (docs/testing.md).
TEST_F(ProbeTest, ExtraCpuFlagsAreReadAsTheProcessors) {
  RunOptions o;
  o.env["MLH_CPU_EXTRA_FLAGS"] = "avx512_fp16 amx_bf16 amx_tile";
  const json report = probe({}, o);
  const json* cpu = find_device(report, "cpu:0");
  ASSERT_NE(cpu, nullptr) << report.dump(2);
  for (const char* feature : {"avx512_fp16", "amx_bf16"})
    EXPECT_NE(std::find((*cpu)["features"].begin(), (*cpu)["features"].end(), feature), (*cpu)["features"].end())
        << feature << " in " << (*cpu)["features"].dump();
  for (const char* precision : {"fp16", "bf16"})
    EXPECT_NE(std::find((*cpu)["fast_precisions"].begin(), (*cpu)["fast_precisions"].end(), precision),
              (*cpu)["fast_precisions"].end())
        << precision << " in " << (*cpu)["fast_precisions"].dump();
}

TEST_F(ProbeTest, TextReportNamesTheChosenDevice) {
  const Result r = host({"--probe"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "Chosen: cpu:0")) << r.describe();
  EXPECT_TRUE(contains(r.out, "Device plugins")) << r.describe();
  EXPECT_TRUE(contains(r.out, "<- chosen")) << r.describe();
  EXPECT_TRUE(contains(r.out, "CUDA (NVIDIA GPU): not available - no NVIDIA driver")) << r.describe();
  EXPECT_TRUE(contains(r.out, "MPS (Apple GPU): not available - MPS needs macOS 12.3+ on Apple Silicon")) << r.describe();
}

TEST_F(ProbeTest, StandardPluginsNotFoundAreReportedAsNotInstalled) {
  // Only the CPU plugin, in a folder of its own: cuda and mps are "not installed".
  copy_plugin_dir(default_plugin_dir(), tmp() / "cpu-only");
  for (const char* f : {"cuda.plugin.json", "libmlhost-cuda.so", "mps.plugin.json", "libmlhost-mps.so"})
    fs::remove(tmp() / "cpu-only" / f);
  const json report = probe({"--no-default-plugin-dir", "--plugin-dir", (tmp() / "cpu-only").string()});
  ASSERT_FALSE(report.is_discarded());
  EXPECT_EQ(report["chosen"], "cpu:0") << report.dump(2);
  for (const char* name : {"cuda", "mps"}) {
    const json* p = find_plugin(report, name);
    ASSERT_NE(p, nullptr) << "no entry for the standard plugin " << name;
    EXPECT_EQ((*p)["status"], "not installed") << p->dump(2);
    EXPECT_TRUE(contains(str((*p)["reason"]), name)) << p->dump(2);
  }
  const Result r = host({"--probe", "--no-default-plugin-dir", "--plugin-dir", (tmp() / "cpu-only").string()});
  EXPECT_TRUE(contains(r.out, "not installed")) << r.describe();
}

// A third-party CPU device loaded alone (the cpuset example) names the processor, and a
// device that reports no fast precision shows no empty "(fast: )".
TEST_F(ProbeTest, AThirdPartyCpuDeviceAloneNamesTheProcessor) {
  REQUIRE_CASE("cpuset");
  const std::vector<std::string> only_cpuset = {"--no-default-plugin-dir", "--plugin-dir", case_dir("cpuset").string()};
  std::vector<std::string> args = {"--probe"};
  args.insert(args.end(), only_cpuset.begin(), only_cpuset.end());
  const Result r = host(args);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const json report = probe(only_cpuset);
  const json* d = find_device(report, "cpuset:0");
  ASSERT_NE(d, nullptr) << report.dump(2);
  EXPECT_EQ(report["platform"]["processor"], (*d)["name"]) << report.dump(2);
  EXPECT_TRUE(contains(r.out, "processor  " + str((*d)["name"]))) << r.describe();
  EXPECT_FALSE(contains(r.out, "(fast: )")) << r.describe();
}

TEST_F(ProbeTest, ProbeDoesNotDependOnTheWorkingFolder) {
  // The default plugin folder is found from the executable, not from the current folder.
  RunOptions o;
  o.cwd = "/";
  const json report = probe({}, o);
  ASSERT_FALSE(report.is_discarded());
  EXPECT_EQ(report["chosen"], "cpu:0");
  bool found_default = false;
  for (const json& d : report["search_path"])
    if (d["origin"] == "default") {
      found_default = true;
      EXPECT_EQ(fs::path(str(d["path"])).lexically_normal(), default_plugin_dir());
    }
  EXPECT_TRUE(found_default) << report["search_path"].dump();
}

}  // namespace
}  // namespace mlhost::cli_test
