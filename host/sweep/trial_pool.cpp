#include "sweep/trial_pool.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <stdexcept>
#include <thread>

#include <spdlog/spdlog.h>

#include "common/stop_request.hpp"

namespace mlhost {

namespace {

struct Running {
  SweepTrial trial;
  int slot = 0;
  std::chrono::steady_clock::time_point start;
  bool told_to_stop = false;
};

// The child: its output to the trial's log, then the trial; never returns.
[[noreturn]] void run_child(const TrialLaunch& launch, int slot, const TrialPoolEvents& events) {
  int status = 1;
  ::setpgid(0, 0);
  const int fd = ::open(launch.log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::perror(("sweep: cannot write " + launch.log.string()).c_str());
    ::_exit(status);
  }
  std::cout.flush();
  std::fflush(nullptr);
  ::dup2(fd, STDOUT_FILENO);
  ::dup2(fd, STDERR_FILENO);
  ::close(fd);
  try {
    status = events.run(launch.trial, slot);
  } catch (const std::exception& e) {
    std::cerr << "host: error: " << e.what() << "\n";
  }
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  if (auto logger = spdlog::default_logger()) logger->flush();
  // _exit: the parent's atexit handlers and static objects are the parent's to run.
  ::_exit(status);
}

int exit_status_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

}  // namespace

int run_trial_pool(const std::vector<TrialLaunch>& launches, int parallel, const TrialPoolEvents& events) {
  std::map<pid_t, Running> running;
  std::vector<bool> slot_busy(static_cast<size_t>(std::max(parallel, 1)), false);
  size_t next = 0;
  int stop = 0;
  while ((next < launches.size() && !stop) || !running.empty()) {
    if (!stop) stop = first_stop_signal();
    // A stop request: each running trial gets it once, from here (its own process group keeps
    // a Ctrl-C or a signal to the sweep's group from reaching it twice); none starts after it.
    if (stop)
      for (auto& [pid, r] : running)
        if (!r.told_to_stop) {
          ::kill(-pid, stop);
          r.told_to_stop = true;
        }
    if (stop && running.empty()) break;
    while (!stop && next < launches.size() && running.size() < slot_busy.size()) {
      int slot = 0;
      while (slot_busy[static_cast<size_t>(slot)]) ++slot;
      const TrialLaunch& launch = launches[next++];
      std::cout.flush();
      std::fflush(nullptr);
      const pid_t pid = ::fork();
      if (pid < 0) throw std::runtime_error("sweep: cannot start a trial (fork failed)");
      if (pid == 0) run_child(launch, slot, events);
      ::setpgid(pid, pid);  // as the child does: whichever runs first, no signal finds it in between
      slot_busy[static_cast<size_t>(slot)] = true;
      running[pid] = {launch.trial, slot, std::chrono::steady_clock::now(), false};
      if (events.started) events.started(launch.trial, slot);
    }
    int wait_status = 0;
    const pid_t done = ::waitpid(-1, &wait_status, WNOHANG);
    if (done > 0) {
      const auto it = running.find(done);
      if (it == running.end()) continue;  // not a trial (none is started otherwise, but be sure)
      const Running r = it->second;
      running.erase(it);
      slot_busy[static_cast<size_t>(r.slot)] = false;
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - r.start).count();
      if (events.ended) events.ended(r.trial, exit_status_of(wait_status), seconds);
      continue;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return stop;
}

}  // namespace mlhost
