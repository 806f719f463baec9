#include "run_files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <stdexcept>

namespace mlhost {
namespace fs = std::filesystem;

void write_file_atomically(const fs::path& path, const std::string& content) {
  const fs::path tmp = path.string() + ".tmp." + std::to_string(::getpid());
  auto fail = [&](const std::string& what) {
    const std::string err = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot write '" + path.string() + "': " + what + ": " + err);
  };
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("open");
  size_t done = 0;
  while (done < content.size()) {
    ssize_t w = ::write(fd, content.data() + done, content.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      ::close(fd);
      fail("write");
    }
    done += static_cast<size_t>(w);
  }
  if (::fsync(fd) != 0) {
    ::close(fd);
    fail("fsync");
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("rename");
  // The rename itself must reach the disk for the new file to survive a crash.
  int dfd = ::open(path.parent_path().empty() ? "." : path.parent_path().c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void prepare_run_dir(const fs::path& dir, bool resume) {
  std::error_code ec;
  const bool exists = fs::exists(dir, ec);
  if (resume) {
    if (!exists || !fs::is_directory(dir, ec))
      throw std::runtime_error("--resume: run folder '" + dir.string() + "' does not exist");
    if (!fs::exists(dir / "config.json", ec))
      throw std::runtime_error("--resume: '" + dir.string() + "' holds no run (no config.json)");
    return;
  }
  if (exists) {
    if (!fs::is_directory(dir, ec)) throw std::runtime_error("--run-dir '" + dir.string() + "' is not a folder");
    if (!fs::is_empty(dir, ec))
      throw std::runtime_error("run folder '" + dir.string() +
                               "' already holds files; pass --resume to continue that run or choose another --run-dir");
  }
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create run folder '" + dir.string() + "': " + ec.message());
}

fs::path default_run_dir(const std::string& algorithm) {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  return fs::path("runs") / (algorithm + "-" + stamp);
}

}  // namespace mlhost
