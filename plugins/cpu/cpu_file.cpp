#include "cpu_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace mlh::cpu {
namespace {

// /proc/cpuinfo of a 512-CPU host is about 1 MiB; the cap only stops a runaway file.
constexpr size_t kMaxFileBytes = size_t{8} << 20;

}  // namespace

// /proc and /sys files report size 0, so this reads until end of file.
std::optional<std::string> read_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  char buffer[16384];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0 || text.size() + static_cast<size_t>(n) > kMaxFileBytes) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

}  // namespace mlh::cpu
