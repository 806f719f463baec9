#include "plugins/isolated.hpp"

#include "common/stop_request.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>

namespace mlhost {
namespace {

using Clock = std::chrono::steady_clock;

volatile sig_atomic_t g_interrupt = 0;
void on_interrupt(int sig) { g_interrupt = sig; }

// While children run, SIGINT/SIGTERM/SIGHUP interrupt the wait instead of killing the host
// outright: the host first kills the children (they are in their own process groups and
// do not get the terminal's Ctrl-C), then dies of the same signal.
class InterruptGuard {
 public:
  InterruptGuard() {
    g_interrupt = 0;
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &sa, &old_[i]);
  }
  ~InterruptGuard() {
    for (size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &old_[i], nullptr);
  }
  int signal() const { return g_interrupt; }

 private:
  static constexpr std::array<int, 3> kSignals = {SIGINT, SIGTERM, SIGHUP};
  std::array<struct sigaction, 3> old_{};
};

constexpr size_t kStderrKeep = 4096;    // bytes of the child's stderr kept for the reason
constexpr size_t kPayloadMax = 64 << 20;  // a payload larger than this is garbage

struct Child {
  pid_t pid = -1;
  int payload_fd = -1;
  int stderr_fd = -1;
  std::string payload, err;
  bool payload_open = false, stderr_open = false, reaped = false;
  int wait_status = 0;
  Clock::time_point finished{};
};

void write_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    data += w;
    n -= static_cast<size_t>(w);
  }
}

[[noreturn]] void child_main(const IsolatedJob& job, int payload_fd, int stderr_fd) {
  ::setpgid(0, 0);  // own process group: the parent can kill whatever the plugin started
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::signal(sig, SIG_DFL);  // not the parent's handlers
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a host killed outright takes its probe children along
  ::dup2(stderr_fd, STDERR_FILENO);
  ::close(stderr_fd);
  // stdout belongs to the host's report; plugin chatter goes to the captured stderr.
  ::dup2(STDERR_FILENO, STDOUT_FILENO);
  int code = 0;
  try {
    std::string out = job();
    write_all(payload_fd, out.data(), out.size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    code = 3;
  } catch (...) {
    std::fprintf(stderr, "unknown exception\n");
    code = 3;
  }
  std::fflush(nullptr);
  ::_exit(code);  // no atexit handlers or static destructors of the parent's state
}

void drain(int& fd, bool& open, std::string& into, size_t keep_tail) {
  char buf[65536];
  ssize_t n = ::read(fd, buf, sizeof buf);
  if (n > 0) {
    into.append(buf, static_cast<size_t>(n));
    if (keep_tail && into.size() > 2 * keep_tail) into.erase(0, into.size() - keep_tail);
    if (!keep_tail && into.size() > kPayloadMax) into.erase(kPayloadMax);
    return;
  }
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  ::close(fd);
  open = false;
}

std::string last_lines(const std::string& text, size_t max_lines) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
  size_t pos = t.size(), lines = 0;
  while (pos > 0 && lines < max_lines) {
    pos = t.rfind('\n', pos - 1);
    if (pos == std::string::npos) {
      pos = 0;
      break;
    }
    ++lines;
  }
  std::string tail = t.substr(pos == 0 ? 0 : pos + 1);
  if (tail.size() > 1000) tail = "..." + tail.substr(tail.size() - 1000);
  return tail;
}

}  // namespace

std::string IsolatedOutcome::failure_reason() const {
  std::string why;
  switch (status) {
    case Status::kOk: return "";
    case Status::kExited: why = "exited with status " + std::to_string(exit_code) + " without an answer"; break;
    case Status::kSignaled:
      why = std::string(signal == SIGABRT ? "aborted" : "crashed") + " with signal " + std::to_string(signal) + " (" +
            strsignal(signal) + ")";
      break;
    case Status::kTimedOut:
      why = "did not answer within " + std::to_string(static_cast<long>(elapsed_ms)) + " ms (hung?), killed";
      break;
    case Status::kSpawnFailed: why = "could not start a child process: " + stderr_tail; return why;
  }
  std::string tail = last_lines(stderr_tail, 3);
  if (!tail.empty()) why += "; its last output: " + tail;
  return why;
}

std::vector<IsolatedOutcome> run_isolated(const std::vector<IsolatedJob>& jobs, std::chrono::milliseconds timeout) {
  std::vector<IsolatedOutcome> outcomes(jobs.size());
  std::vector<Child> children(jobs.size());
  // A command that records stop requests (a run, --calibrate, a sweep) acts on one at its next
  // stage boundary, as the plan promises ("stopped before it trains"), so its plugin calls
  // (milliseconds, each under its timeout) finish undisturbed; only a bare probe is
  // interrupted, ending its children and then itself. Without this, a SIGTERM that came
  // during a calibration's plugin call killed the host outright instead of stopping it.
  std::optional<InterruptGuard> interrupts;
  if (!stop_signals_recorded()) interrupts.emplace();
  auto interrupted = [&interrupts] { return interrupts ? interrupts->signal() : 0; };
  const auto start = Clock::now();
  std::fflush(nullptr);  // or buffered output would be written twice, by parent and child

  for (size_t i = 0; i < jobs.size(); ++i) {
    int payload_pipe[2], stderr_pipe[2];
    if (::pipe2(payload_pipe, O_CLOEXEC) != 0) {
      outcomes[i].stderr_tail = std::strerror(errno);
      continue;
    }
    if (::pipe2(stderr_pipe, O_CLOEXEC) != 0) {
      outcomes[i].stderr_tail = std::strerror(errno);
      ::close(payload_pipe[0]);
      ::close(payload_pipe[1]);
      continue;
    }
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(payload_pipe[0]);
      ::close(stderr_pipe[0]);
      child_main(jobs[i], payload_pipe[1], stderr_pipe[1]);
    }
    ::close(payload_pipe[1]);
    ::close(stderr_pipe[1]);
    if (pid < 0) {
      outcomes[i].stderr_tail = std::strerror(errno);
      ::close(payload_pipe[0]);
      ::close(stderr_pipe[0]);
      continue;
    }
    ::setpgid(pid, pid);  // also from the parent, so a kill right after fork reaches the group
    children[i] = Child{pid, payload_pipe[0], stderr_pipe[0], {}, {}, true, true, false, 0, {}};
  }

  const auto deadline = start + timeout;
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::pair<size_t, bool>> owners;  // child index, is payload
    for (size_t i = 0; i < children.size(); ++i) {
      Child& c = children[i];
      if (c.payload_open) fds.push_back({c.payload_fd, POLLIN, 0}), owners.push_back({i, true});
      if (c.stderr_open) fds.push_back({c.stderr_fd, POLLIN, 0}), owners.push_back({i, false});
    }
    if (fds.empty() || interrupted()) break;
    const auto now = Clock::now();
    if (now >= deadline) break;
    const int wait_ms =
        static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count()) + 1;
    int n = ::poll(fds.data(), fds.size(), wait_ms);
    if (n < 0 && errno != EINTR) break;
    for (size_t k = 0; n > 0 && k < fds.size(); ++k) {
      if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Child& c = children[owners[k].first];
      if (owners[k].second)
        drain(c.payload_fd, c.payload_open, c.payload, 0);
      else
        drain(c.stderr_fd, c.stderr_open, c.err, kStderrKeep);
      if (!c.payload_open && !c.stderr_open) c.finished = Clock::now();
    }
  }

  for (size_t i = 0; i < children.size(); ++i) {
    Child& c = children[i];
    IsolatedOutcome& o = outcomes[i];
    if (c.pid < 0) continue;  // kSpawnFailed, set above
    bool timed_out = c.payload_open || c.stderr_open || interrupted();
    // Closed pipes usually mean the child is exiting, but a plugin may close them and go on:
    // wait for the exit only until the deadline.
    while (!timed_out) {
      pid_t r = ::waitpid(c.pid, &c.wait_status, WNOHANG);
      if (r == c.pid || (r < 0 && errno != EINTR)) break;
      if (Clock::now() >= deadline) timed_out = true;
      else ::usleep(500);
    }
    ::kill(-c.pid, SIGKILL);  // the hung child, or leftovers the plugin may have started
    if (timed_out) {
      while (::waitpid(c.pid, &c.wait_status, 0) < 0 && errno == EINTR) {
      }
    }
    if (c.payload_open) ::close(c.payload_fd);
    if (c.stderr_open) ::close(c.stderr_fd);
    const auto end = timed_out ? Clock::now() : c.finished;
    o.elapsed_ms = std::chrono::duration<double, std::milli>(end - start).count();
    o.stderr_tail = c.err.size() > kStderrKeep ? c.err.substr(c.err.size() - kStderrKeep) : c.err;
    if (timed_out) {
      o.status = IsolatedOutcome::Status::kTimedOut;
      o.elapsed_ms = static_cast<double>(timeout.count());
    } else if (WIFSIGNALED(c.wait_status)) {
      o.status = IsolatedOutcome::Status::kSignaled;
      o.signal = WTERMSIG(c.wait_status);
    } else if (WIFEXITED(c.wait_status) && WEXITSTATUS(c.wait_status) == 0) {
      o.status = IsolatedOutcome::Status::kOk;
      o.payload = std::move(c.payload);
    } else {
      o.status = IsolatedOutcome::Status::kExited;
      o.exit_code = WIFEXITED(c.wait_status) ? WEXITSTATUS(c.wait_status) : -1;
    }
  }
  if (const int sig = interrupted()) {
    interrupts.reset();
    // Die of the signal, as without children: its default action, not the handler the host had
    // before (a run's handler only records stop requests, common/stop_request.hpp).
    ::signal(sig, SIG_DFL);
    ::raise(sig);
  }
  return outcomes;
}

}  // namespace mlhost
