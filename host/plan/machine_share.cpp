#include "plan/machine_share.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <vector>

#include "common/worker_flag.hpp"

namespace mlhost {

namespace fs = std::filesystem;

namespace {

std::string read_all(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A NUL-separated /proc file (cmdline, environ) as its strings.
std::vector<std::string> nul_separated(const std::string& text) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, '\0')) out.push_back(item);
  return out;
}

pid_t parent_of(const fs::path& process) {
  const std::string stat = read_all(process / "stat");
  const size_t close = stat.rfind(')');
  char state = 0;
  int ppid = -1;
  if (close == std::string::npos || std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) != 2) return -1;
  return ppid;
}

double seconds_of(const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; }

// CPU seconds of this process and its reaped children.
double own_cpu_seconds() {
  double total = 0;
  for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    rusage u{};
    if (::getrusage(who, &u) == 0) total += seconds_of(u.ru_utime) + seconds_of(u.ru_stime);
  }
  return total;
}

// Seconds every CPU spent busy since boot (/proc/stat's first line); negative when unreadable.
double busy_cpu_seconds(const fs::path& proc) {
  std::istringstream in(read_all(proc / "stat"));
  std::string label;
  unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  if (!(in >> label >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) || label != "cpu")
    return -1;
  return static_cast<double>(user + nice + system + irq + softirq + steal) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

bool MachineShare::shared() const {
  return looked && (other_workers > 0 || other_runs_planning > 0 || busy_cpus >= kBusyOtherCpus);
}

std::string MachineShare::describe() const {
  char load[64];
  std::snprintf(load, sizeof load, "other processes busy on %.1f of %d CPUs", busy_cpus, online_cpus);
  std::string runs;
  if (other_workers > 0)
    runs = std::to_string(other_workers) + " mlhost worker" + (other_workers == 1 ? "" : "s") + " of other runs (" +
           std::to_string(other_worker_threads) + " thread" + (other_worker_threads == 1 ? "" : "s") + "), ";
  if (other_runs_planning > 0)
    runs += std::to_string(other_runs_planning) + " other run" + (other_runs_planning == 1 ? "" : "s") +
            " starting now, ";
  return runs + load;
}

MachineShare read_machine_share(const fs::path& proc, pid_t self, const std::string& own_master,
                                std::chrono::milliseconds sample, const RunRegistry* registry) {
  MachineShare share;
  share.looked = true;
  share.online_cpus = static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  const CpuUseMeter others(proc);
  std::this_thread::sleep_for(sample);
  share.busy_cpus = std::max(0.0, others.others_cpus());
  const std::vector<RegisteredRun> registered = registry ? registry->others() : std::vector<RegisteredRun>();
  std::error_code ec;
  for (fs::directory_iterator it(proc, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::vector<std::string> argv = nul_separated(read_all(it->path() / "cmdline"));
    if (argv.size() < 2 || argv[1] != kWorkerSpecFlag) continue;
    const pid_t parent = parent_of(it->path());
    if (parent == self) continue;  // this host's own (calibration) workers
    if (std::any_of(registered.begin(), registered.end(), [parent](const RegisteredRun& r) { return r.pid == parent; }))
      continue;  // a registered run's: counted below
    std::map<std::string, std::string> env;
    for (const std::string& kv : nul_separated(read_all(it->path() / "environ")))
      if (const size_t eq = kv.find('='); eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
    if (!own_master.empty() && env.count("MASTER_ADDR") && env.count("MASTER_PORT") &&
        env["MASTER_ADDR"] + ":" + env["MASTER_PORT"] == own_master)
      continue;  // another rank of this run, started by another launcher
    ++share.other_workers;
    // Another user's worker does not show its environment: count one thread.
    const int threads = env.count("OMP_NUM_THREADS") ? std::atoi(env["OMP_NUM_THREADS"].c_str()) : 0;
    share.other_worker_threads += std::max(1, threads);
  }
  for (const RegisteredRun& r : registered) {
    if (r.threads > 0) {
      ++share.other_workers;
      share.other_worker_threads += r.threads;
    } else {
      ++share.other_runs_planning;
    }
  }
  return share;
}

CpuUseMeter::CpuUseMeter(fs::path proc) : proc_(std::move(proc)) {
  start_busy_s_ = busy_cpu_seconds(proc_);
  start_ours_s_ = own_cpu_seconds();
  start_wall_s_ = wall_seconds();
}

double CpuUseMeter::others_cpus() const {
  const double busy = busy_cpu_seconds(proc_);
  const double wall = wall_seconds() - start_wall_s_;
  if (start_busy_s_ < 0 || busy < 0 || wall <= 0) return -1;
  return std::max(0.0, (busy - start_busy_s_) - (own_cpu_seconds() - start_ours_s_)) / wall;
}

}  // namespace mlhost
