// Whether this machine's CPUs are shared with other work, for the plan (docs/plan.md,
// "A shared machine"): the mlhost workers of other runs (their intra-op threads), and how
// much CPU time everything else takes, over a short sample before planning and over a whole
// calibration. (Not the load average: a minute's average still counts a build that has just
// ended, which would keep the first run after it from calibrating.)
//
// Two runs on two cores slowed each other 70x with the default plan: each started a thread
// per core, and OpenMP's idle threads spin on cores the other run needs. A run that starts
// beside others takes the cores they leave and lets its idle threads sleep (passive).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "plan/run_registry.hpp"

namespace mlhost {

// Other processes keeping this many CPUs busy on average make the machine a shared one.
constexpr double kBusyOtherCpus = 0.5;

struct MachineShare {
  bool looked = false;            // false: not read (MLH_MACHINE_SHARING=dedicated, or a test)
  int other_workers = 0;          // mlhost workers of other runs now running here
  int other_worker_threads = 0;   // their intra-op threads (OMP_NUM_THREADS; 1 each where unreadable)
  int other_runs_planning = 0;    // other runs started here that are still planning (run_registry.hpp)
  double busy_cpus = 0;           // CPUs everything else kept busy over the sample (0: unknown)
  int online_cpus = 0;

  // Other runs' workers, or other processes keeping kBusyOtherCpus or more busy.
  bool shared() const;
  // "1 mlhost worker of other runs (2 threads), other processes busy on 2.0 of 2 CPUs"
  std::string describe() const;
};

// Reads `proc` (normally /proc): workers are processes whose command line holds the worker
// flag, apart from the children of `self` (this host's own) and those of `own_master`
// ("addr:port", the rendezvous of this run's other ranks; empty: none); the CPU use of
// everything else is sampled over `sample`. `registry`: the other runs it holds after the
// sample (runs started meanwhile included), each counted once (its planned threads, or as
// planning), not again by its workers.
MachineShare read_machine_share(const std::filesystem::path& proc, pid_t self, const std::string& own_master,
                                std::chrono::milliseconds sample, const RunRegistry* registry = nullptr);

// The CPU time everything but this process and its children used, from /proc/stat, between
// the meter's start and others_cpus() (as a number of CPUs kept busy on average). A
// calibration that measured on a busy machine says so and is not cached.
class CpuUseMeter {
 public:
  explicit CpuUseMeter(std::filesystem::path proc = "/proc");
  // Other processes' average CPU use since construction; negative when /proc/stat is unreadable.
  double others_cpus() const;

 private:
  std::filesystem::path proc_;
  double start_busy_s_ = -1, start_ours_s_ = 0, start_wall_s_ = 0;
};

}  // namespace mlhost
