// What a worker that crashes (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) says before it dies:
// the signal, the shared object and function the fault is in (an environment library, a
// user's plugin, LibTorch) and how far the run had got, in one line on its stderr and in the
// run's log.txt:
//
//   [worker crash] signal 11 (Segmentation fault) in /home/me/libmyenv.so (my_step+0x1c), at 1152 steps
//
// The host, which sees only "killed by signal 11", reads that line back from the log
// (crash_line) and adds it to the error the run ends with.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace mlhost {

// In the worker, before the plugin is loaded: installs the handlers (on an alternate stack for
// the calling thread, so a stack overflow there is reported too). The handler writes the line, then gives the signal
// to the action it had before (the default: the worker dies of it, and the host sees its end
// as it was; under AddressSanitizer, its report).
void install_crash_report(const std::filesystem::path& log_file);

// How far the run has got (the progress callback's), for the crash line.
void note_crash_progress(int64_t done, const char* unit);

// The last crash line of signal `sig` in `log_file` ("signal 11 (...) in ..., at ..."),
// without its prefix.
std::optional<std::string> crash_line(const std::filesystem::path& log_file, int sig);

}  // namespace mlhost
