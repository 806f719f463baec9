#include "common/stop_request.hpp"

#include <signal.h>

#include <cctype>
#include <cstring>
#include <cstdlib>

namespace mlhost {

namespace {

volatile sig_atomic_t g_first_stop = 0;
volatile sig_atomic_t g_preemption = 0;

void on_stop_signal(int sig) { record_stop_signal(sig); }

struct NamedSignal {
  const char* name;
  int number;
};
constexpr NamedSignal kSignals[] = {{"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"TERM", SIGTERM},
                                    {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"ALRM", SIGALRM}, {"XCPU", SIGXCPU},
                                    {"CONT", SIGCONT}, {"URG", SIGURG}};

}  // namespace

void record_stop_signal(int sig) noexcept {
  if (g_first_stop == 0) g_first_stop = sig;
}

int first_stop_signal() noexcept { return g_first_stop; }

void set_preemption_signal(int sig) noexcept { g_preemption = sig; }
int preemption_signal() noexcept { return g_preemption; }
bool is_preemption(int sig) noexcept { return sig == SIGTERM || (sig != 0 && sig == g_preemption); }

std::string signal_name(int sig) {
  for (const NamedSignal& s : kSignals)
    if (s.number == sig) return std::string("SIG") + s.name;
  return "signal " + std::to_string(sig);
}

int parse_signal(const std::string& text) {
  std::string name = text;
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (name.rfind("SIG", 0) == 0) name = name.substr(3);
  for (const NamedSignal& s : kSignals)
    if (name == s.name) return s.number == SIGINT || s.number == SIGCONT || s.number == SIGURG ? 0 : s.number;
  if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos) {
    const int n = std::atoi(name.c_str());
    for (const NamedSignal& s : kSignals)
      if (s.number == n) return parse_signal(s.name);
  }
  return 0;
}

void record_stop_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
  if (g_preemption != 0) ::sigaction(g_preemption, &sa, nullptr);
}

bool stop_signals_recorded() {
  struct sigaction current {};
  return ::sigaction(SIGTERM, nullptr, &current) == 0 && current.sa_handler == on_stop_signal;
}

}  // namespace mlhost
