#include "run/crash_report.hpp"

#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>

namespace mlhost {
namespace fs = std::filesystem;

namespace {

constexpr const char* kPrefix = "[worker crash] ";
constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

// Everything the handler reads is prepared before: it may only make async-signal-safe calls
// (dladdr and backtrace are not on POSIX's list, but read only what the loader already holds;
// backtrace is called once at install so that it does not load libgcc_s in the handler).
char g_log_path[4096];
std::atomic<int64_t> g_done{-1};
char g_unit[32];
alignas(16) char g_alt_stack[1 << 16];
// What each signal did before (the default action, or AddressSanitizer's report): the handler
// puts it back and lets it act.
struct sigaction g_previous[NSIG];

const char* signal_text(int sig) {
  switch (sig) {
    case SIGSEGV: return "Segmentation fault";
    case SIGBUS: return "Bus error";
    case SIGFPE: return "Floating point exception";
    case SIGILL: return "Illegal instruction";
    case SIGABRT: return "Aborted";
    default: return "signal";
  }
}

// A line built in a fixed buffer without allocating.
struct Line {
  char text[2048];
  size_t size = 0;
  void add(const char* s) {
    while (s && *s && size + 1 < sizeof text) text[size++] = *s++;
  }
  void add_number(uint64_t n, unsigned base = 10) {
    char digits[24];
    int k = 0;
    do {
      digits[k++] = "0123456789abcdef"[n % base];
      n /= base;
    } while (n && k < 24);
    while (k) {
      const char c[2] = {digits[--k], 0};
      add(c);
    }
  }
};

// The code that is not the crash's subject: the C and C++ runtimes (abort, raise, memcpy,
// std::terminate) and this handler's own program.
bool is_runtime(const Dl_info& info, const void* self_base) {
  if (info.dli_fbase == self_base) return true;
  const char* slash = info.dli_fname ? std::strrchr(info.dli_fname, '/') : nullptr;
  const char* base = slash ? slash + 1 : info.dli_fname ? info.dli_fname : "";
  for (const char* runtime : {"libc.so", "libc-", "libstdc++.so", "libgcc_s.so", "libpthread", "ld-linux"})
    if (std::strncmp(base, runtime, std::strlen(runtime)) == 0) return true;
  return false;
}

void* fault_address(void* context) {
  const auto* uc = static_cast<const ucontext_t*>(context);
#if defined(__x86_64__)
  return reinterpret_cast<void*>(uc->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  return reinterpret_cast<void*>(uc->uc_mcontext.pc);
#else
  (void)uc;
  return nullptr;
#endif
}

void on_crash(int sig, siginfo_t*, void* context) {
  Dl_info self{};
  dladdr(reinterpret_cast<void*>(&on_crash), &self);
  // The first frame in code of its own: the faulting instruction's, else the nearest caller's
  // (an abort called from a plugin, a memcpy an environment library called).
  Dl_info where{};
  void* at = fault_address(context);
  bool found = at && dladdr(at, &where) && where.dli_fname && !is_runtime(where, self.dli_fbase);
  if (!found) {
    void* frames[64];
    const int n = backtrace(frames, 64);
    for (int i = 0; i < n && !found; ++i) {
      Dl_info info{};
      if (dladdr(frames[i], &info) && info.dli_fname && !is_runtime(info, self.dli_fbase)) {
        where = info;
        at = frames[i];
        found = true;
      }
    }
    if (!found) found = at && dladdr(at, &where) && where.dli_fname;  // the runtime's or the host's own
  }
  Line line;
  line.add(kPrefix);
  line.add("signal ");
  line.add_number(static_cast<uint64_t>(sig));
  line.add(" (");
  line.add(signal_text(sig));
  line.add(")");
  if (found) {
    line.add(" in ");
    line.add(where.dli_fname);
    if (where.dli_sname) {
      line.add(" (");
      line.add(where.dli_sname);
      line.add("+0x");
      line.add_number(static_cast<uint64_t>(static_cast<char*>(at) - static_cast<char*>(where.dli_saddr)), 16);
      line.add(")");
    }
  }
  const int64_t done = g_done.load(std::memory_order_relaxed);
  if (done >= 0) {
    line.add(", at ");
    line.add_number(static_cast<uint64_t>(done));
    line.add(" ");
    line.add(g_unit);
  } else {
    line.add(", before the run reported progress");
  }
  line.add("\n");
  (void)!::write(STDERR_FILENO, line.text, line.size);
  if (g_log_path[0]) {
    const int fd = ::open(g_log_path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd >= 0) {
      (void)!::write(fd, line.text, line.size);
      ::close(fd);
    }
  }
  // The previous action ends the worker once the handler returns (a fault by running the
  // instruction again, a raised signal when it is unblocked).
  ::sigaction(sig, &g_previous[sig], nullptr);
  ::raise(sig);
}

}  // namespace

void install_crash_report(const fs::path& log_file) {
  const std::string path = log_file.string();
  if (path.size() < sizeof g_log_path) std::memcpy(g_log_path, path.c_str(), path.size() + 1);
  void* warm[1];
  backtrace(warm, 1);
  stack_t stack{};
  stack.ss_sp = g_alt_stack;
  stack.ss_size = sizeof g_alt_stack;
  ::sigaltstack(&stack, nullptr);
  struct sigaction sa {};
  sa.sa_sigaction = on_crash;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int sig : kSignals) ::sigaction(sig, &sa, &g_previous[sig]);
}

void note_crash_progress(int64_t done, const char* unit) {
  if (unit && std::strncmp(unit, g_unit, sizeof g_unit - 1) != 0) {
    std::strncpy(g_unit, unit, sizeof g_unit - 1);
    g_unit[sizeof g_unit - 1] = 0;
  }
  g_done.store(done, std::memory_order_relaxed);
}

std::optional<std::string> crash_line(const fs::path& log_file, int sig) {
  const std::string start = std::string(kPrefix) + "signal " + std::to_string(sig) + " ";
  std::ifstream in(log_file, std::ios::binary);
  std::optional<std::string> last;
  for (std::string line; std::getline(in, line);)
    if (line.rfind(start, 0) == 0) last = line.substr(std::strlen(kPrefix));
  return last;
}

}  // namespace mlhost
