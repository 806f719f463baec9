// A shared machine in the plan: the workers of other runs read from a /proc tree (a fake one
// here, with the files the kernel writes), and the plan's threads and OpenMP wait policy that
// follow. The real /proc with a real second run: tests/cli/cli_shared_machine_test.cpp.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <initializer_list>
#include <memory>
#include <string>

#include "plan/machine_share.hpp"
#include "plan/planner.hpp"
#include "plan/run_registry.hpp"
#include "planning.hpp"
#include "temp_dir.hpp"
#include "test_devices.hpp"
#include "test_files.hpp"

namespace mlhost {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// A process in the fake /proc: its parent, command line and environment (NUL-separated).
void add_process(const fs::path& proc, int pid, int parent, const std::string& cmdline, const std::string& environ) {
  const fs::path dir = proc / std::to_string(pid);
  fs::create_directories(dir);
  testing::write_text(dir / "stat", std::to_string(pid) + " (host) S " + std::to_string(parent) + " 1 1 0 -1\n");
  testing::write_text(dir / "cmdline", cmdline);
  testing::write_text(dir / "environ", environ);
}

// Strings as /proc writes them: each ends with a NUL.
std::string nul_joined(std::initializer_list<const char*> items) {
  std::string out;
  for (const char* item : items) out += std::string(item) + '\0';
  return out;
}

const std::string kWorker = nul_joined({"/opt/mlhost/bin/host", "--mlh-worker-spec-fd", "5"});

TEST(MachineShare, CountsTheWorkersOfOtherRunsAndTheirThreads) {
  TempDir t;
  const fs::path proc = t / "proc";
  fs::create_directories(proc);
  add_process(proc, 100, 1, kWorker, nul_joined({"OMP_NUM_THREADS=2", "HOME=/root"}));  // another run
  add_process(proc, 101, 4242, kWorker, nul_joined({"OMP_NUM_THREADS=8"}));            // our own child
  add_process(proc, 102, 1, kWorker,
              nul_joined({"OMP_NUM_THREADS=4", "MASTER_ADDR=10.0.0.1", "MASTER_PORT=29500"}));  // our run's rank
  add_process(proc, 103, 1, nul_joined({"python3", "train.py"}), "");                       // not mlhost
  add_process(proc, 104, 1, kWorker, "");  // another user's: no environment to read
  add_process(proc, 105, 1, nul_joined({"/opt/mlhost/bin/host", "--algorithm", "trm"}), "");  // a host, not a worker

  const MachineShare share = read_machine_share(proc, 4242, "10.0.0.1:29500", std::chrono::milliseconds(0));
  EXPECT_TRUE(share.looked);
  EXPECT_EQ(share.other_workers, 2);
  EXPECT_EQ(share.other_worker_threads, 3) << "2 read from its environment, 1 for the unreadable one";
  EXPECT_EQ(share.busy_cpus, 0.0) << "no /proc/stat here: unknown";
  EXPECT_TRUE(share.shared());
  EXPECT_EQ(share.describe().rfind("2 mlhost workers of other runs (3 threads), other processes busy on 0.0 of ", 0), 0u)
      << share.describe();

  // Without the rendezvous, the rank counts as another run's worker.
  EXPECT_EQ(read_machine_share(proc, 4242, "", std::chrono::milliseconds(0)).other_workers, 3);
}

TEST(MachineShare, AQuietMachineIsNotShared) {
  TempDir t;
  const fs::path proc = t / "proc";
  fs::create_directories(proc);
  add_process(proc, 103, 1, nul_joined({"python3", "train.py"}), "");
  const MachineShare share = read_machine_share(proc, 4242, "", std::chrono::milliseconds(0));
  EXPECT_EQ(share.other_workers, 0);
  EXPECT_FALSE(share.shared());
  MachineShare loaded = share;
  loaded.busy_cpus = kBusyOtherCpus;  // other processes keeping half a CPU busy
  EXPECT_TRUE(loaded.shared());
  EXPECT_FALSE(MachineShare{}.shared()) << "not looked at: never shared";
}

TEST(MachineShare, AProcessBusyNowMakesTheMachineShared) {
  const pid_t spinner = ::fork();
  ASSERT_GE(spinner, 0);
  if (spinner == 0) {
    for (volatile unsigned long i = 0;; i = i + 1) {
    }
  }
  const MachineShare share = read_machine_share("/proc", ::getpid(), "", std::chrono::milliseconds(400));
  ::kill(spinner, SIGKILL);
  ::waitpid(spinner, nullptr, 0);
  EXPECT_GE(share.busy_cpus, kBusyOtherCpus) << share.describe();
  EXPECT_TRUE(share.shared());
}

TEST(MachineShare, OthersCpuUseLeavesOutThisProcess) {
  const CpuUseMeter meter;
  // Busy here for a while: our own CPU time is not "others".
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  volatile double x = 0;
  while (std::chrono::steady_clock::now() < until) x = x + 1;
  const double others = meter.others_cpus();
  EXPECT_GE(others, 0.0);
  EXPECT_LT(CpuUseMeter(fs::path("/nonexistent")).others_cpus(), 0.0) << "unreadable /proc/stat";
}

class SharedMachinePlan : public ::testing::Test {
 protected:
  static MachineShare beside(int workers, int threads) {
    MachineShare s;
    s.looked = true;
    s.other_workers = workers;
    s.other_worker_threads = threads;
    s.online_cpus = 2;
    s.busy_cpus = 0.2;
    return s;
  }
  json plan(const MachineShare& share, std::function<void(PlanRequest&)> tweak = nullptr) {
    PlanRequest request = testing::request_for(testing::epyc_cpu());
    request.sharing = share;
    if (tweak) tweak(request);
    return plan_run(request, services_).plan;
  }
  testing::FakePlanServices services_;
};

// A shared machine lowers throughput, never changes the numbers: beside other runs, or other
// load, a run keeps the threads it would plan alone, and its idle threads sleep.
TEST_F(SharedMachinePlan, BesideAnotherRunItKeepsItsThreadsAndSleepsWhenIdle) {
  // A quiet machine: every core, the OpenMP runtime's own wait policy.
  json p = plan(MachineShare{});
  EXPECT_EQ(p["threads"]["intra_op"], 2);
  EXPECT_TRUE(p["omp_wait_policy"].is_null()) << p.dump(2);

  for (const MachineShare& share : {beside(1, 1), beside(1, 2), beside(2, 4)}) {
    p = plan(share);
    EXPECT_EQ(p["threads"]["intra_op"], 2) << share.describe();
    EXPECT_EQ(p["sources"]["threads"].get<std::string>().find("shared machine"), std::string::npos)
        << p["sources"].dump(2);
    EXPECT_EQ(p["omp_wait_policy"], "passive") << share.describe();
    EXPECT_NE(p["sources"]["omp_wait_policy"].get<std::string>().find("shared machine"), std::string::npos);
  }
  // Other processes busy on the CPUs, no other mlhost run: likewise.
  MachineShare loaded = beside(0, 0);
  loaded.busy_cpus = 1.5;
  p = plan(loaded);
  EXPECT_EQ(p["threads"]["intra_op"], 2);
  EXPECT_EQ(p["omp_wait_policy"], "passive");
}

class SplittingSharedMachinePlan : public SharedMachinePlan {
 protected:
  json split_plan(const MachineShare& share) {
    TempDir t;
    testing::write_text(t / "hw.ini", "shared_machine_threads = split\n");
    const HardwareSettings settings = read_hardware_settings(t / "hw.ini");
    return plan(share, [&](PlanRequest& r) { r.settings = settings; });
  }
};

// shared_machine_threads = split: the cores other runs leave, for throughput over numbers.
TEST_F(SplittingSharedMachinePlan, ItTakesTheCoresLeft) {
  EXPECT_EQ(split_plan(MachineShare{})["threads"]["intra_op"], 2);
  // One other run holding one core: the other is ours.
  json p = split_plan(beside(1, 1));
  EXPECT_EQ(p["threads"]["intra_op"], 1);
  EXPECT_EQ(p["omp_wait_policy"], "passive");
  EXPECT_NE(p["sources"]["threads"].get<std::string>().find("1 on a shared machine (1 mlhost worker of other runs (1 "
                                                              "thread)"),
            std::string::npos)
      << p["sources"].dump(2);
  EXPECT_NE(p["sources"]["threads"].get<std::string>().find("shared_machine_threads = split, settings file "),
            std::string::npos)
      << p["sources"].dump(2);
  // Another run holding both cores: a fair share, one.
  EXPECT_EQ(split_plan(beside(1, 2))["threads"]["intra_op"], 1);
  // Other processes busy on the CPUs, no other mlhost run: nothing to split with.
  MachineShare loaded = beside(0, 0);
  loaded.busy_cpus = 1.5;
  EXPECT_EQ(split_plan(loaded)["threads"]["intra_op"], 2);
}

// Runs in the registry still planning hold nothing yet: each is counted at the fair share, so
// that runs started together split the cores; one that planned is counted by its threads.
TEST_F(SplittingSharedMachinePlan, RunsStillPlanningAreCountedAtTheFairShare) {
  MachineShare planning = beside(0, 0);
  planning.other_runs_planning = 1;
  json p = split_plan(planning);
  EXPECT_EQ(p["threads"]["intra_op"], 1);
  EXPECT_NE(p["sources"]["threads"].get<std::string>().find("1 other run starting now"), std::string::npos)
      << p["sources"].dump(2);
  EXPECT_EQ(p["omp_wait_policy"], "passive");
  // The other planned 1 thread of the 2 (it saw this one planning): the one left.
  EXPECT_EQ(split_plan(beside(1, 1))["threads"]["intra_op"], 1);
  // Without the setting, a run starting beside one still planning keeps its threads.
  EXPECT_EQ(plan(planning)["threads"]["intra_op"], 2);
}

// The registry: an entry per host process with its threads, another process's seen while it
// lives and dropped by the next reader once it is gone (or its pid taken by another process),
// this process's own never among the others.
TEST(RunRegistry, OthersAreTheLiveRunsAndNeverOneself) {
  TempDir t;
  const fs::path dir = t.path() / "runs";
  const std::unique_ptr<RunRegistry> registry = RunRegistry::open(dir);
  ASSERT_TRUE(registry);
  registry->enter(0);
  EXPECT_TRUE(registry->others().empty());
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t other = ::fork();
  ASSERT_GE(other, 0);
  if (other == 0) {
    const std::unique_ptr<RunRegistry> r = RunRegistry::open(dir);
    r->enter(3);
    char c = 1;
    (void)!::write(ready[1], &c, 1);
    ::pause();
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  std::vector<RegisteredRun> others = registry->others();
  ASSERT_EQ(others.size(), 1u);
  EXPECT_EQ(others[0].pid, other);
  EXPECT_EQ(others[0].threads, 3);
  ::kill(other, SIGKILL);
  ::waitpid(other, nullptr, 0);
  EXPECT_TRUE(registry->others().empty());
  EXPECT_FALSE(fs::exists(dir / std::to_string(other))) << "a stale entry is removed";
  // A live pid whose start time is not the entry's is another process by that number.
  testing::write_text(dir / std::to_string(::getppid()), "threads 2\nstart 0\n");
  EXPECT_TRUE(registry->others().empty());
  registry->leave();
  EXPECT_FALSE(fs::exists(dir / std::to_string(::getpid())));
}

TEST_F(SharedMachinePlan, TheSettingsFileStillWins) {
  TempDir t;
  testing::write_text(t / "hw.ini", "intra_op_threads = 2\nomp_wait_policy = active\n");
  const HardwareSettings settings = read_hardware_settings(t / "hw.ini");
  const json p = plan(beside(1, 2), [&](PlanRequest& r) { r.settings = settings; });
  EXPECT_EQ(p["threads"]["intra_op"], 2);
  EXPECT_EQ(p["omp_wait_policy"], "active");
}

}  // namespace
}  // namespace mlhost
