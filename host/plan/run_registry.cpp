#include "plan/run_registry.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/file_lock.hpp"

namespace mlhost {

namespace fs = std::filesystem;

namespace {

// The start time of `pid` (/proc/<pid>/stat, field 22): a pid reused by another process
// since an entry was written does not keep the entry alive.
std::string start_time(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return "";
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i)
    if (i == 22) return field;
  return "";
}

}  // namespace

std::unique_ptr<RunRegistry> RunRegistry::open() {
  const char* dir = std::getenv("MLH_RUN_REGISTRY_DIR");
  return open(dir && *dir ? fs::path(dir) : fs::temp_directory_path() / "mlhost-runs");
}

std::unique_ptr<RunRegistry> RunRegistry::open(const fs::path& dir) {
  std::error_code ec;
  if (fs::create_directories(dir, ec))
    ::chmod(dir.c_str(), 01777);  // every user's runs, each removing only its own entries (sticky)
  if (!fs::is_directory(dir, ec) || ::access(dir.c_str(), W_OK) != 0) return nullptr;
  return std::unique_ptr<RunRegistry>(new RunRegistry(dir));
}

RunRegistry::RunRegistry(fs::path dir) : dir_(std::move(dir)) {}

RunRegistry::~RunRegistry() { leave(); }

void RunRegistry::enter(int threads) {
  const FileLock lock(dir_ / ".lock");
  const fs::path entry = dir_ / std::to_string(::getpid());
  const fs::path temp = entry.string() + ".tmp";
  {
    std::ofstream out(temp, std::ios::trunc);
    out << "threads " << threads << "\nstart " << start_time(::getpid()) << "\n";
  }
  ::chmod(temp.c_str(), 0644);
  std::error_code ec;
  fs::rename(temp, entry, ec);
  entered_ = !ec;
}

std::vector<RegisteredRun> RunRegistry::others() const {
  const FileLock lock(dir_ / ".lock");
  std::vector<RegisteredRun> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::atol(name.c_str()));
    if (pid == ::getpid()) continue;
    std::ifstream in(it->path());
    std::string key, start;
    RegisteredRun run;
    run.pid = pid;
    while (in >> key) {
      if (key == "threads") in >> run.threads;
      else if (key == "start") in >> start;
    }
    const bool alive = (::kill(pid, 0) == 0 || errno == EPERM) && start_time(pid) == start;
    if (!alive) {
      std::error_code removed;
      fs::remove(it->path(), removed);  // another user's stale entry stays (sticky folder); it is skipped
      continue;
    }
    out.push_back(run);
  }
  return out;
}

void RunRegistry::leave() {
  if (!entered_) return;
  std::error_code ec;
  fs::remove(dir_ / std::to_string(::getpid()), ec);
  entered_ = false;
}

}  // namespace mlhost
