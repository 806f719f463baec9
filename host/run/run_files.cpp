#include "run/run_files.hpp"

#include <ctime>
#include <stdexcept>


namespace mlhost {
namespace fs = std::filesystem;

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
