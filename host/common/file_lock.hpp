// An exclusive flock on a lock file for as long as the object lives, for files several host
// processes update at once (the calibration cache, the run registry). Where the lock file
// cannot be opened there is no lock, and the caller goes on unlocked.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>

namespace mlhost {

class FileLock {
 public:
  // Read-only is enough for flock, so a lock file another user made (0666 less the umask)
  // still locks.
  explicit FileLock(const std::filesystem::path& lock_file)
      : fd_(::open(lock_file.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0666)) {
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

}  // namespace mlhost
