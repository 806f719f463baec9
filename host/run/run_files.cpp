#include "run/run_files.hpp"

#include <ctime>
#include <set>
#include <stdexcept>

namespace mlhost {
namespace fs = std::filesystem;

void prepare_run_dir(const fs::path& dir, bool resume, const std::string& command_on_trained_run) {
  std::error_code ec;
  const bool exists = fs::exists(dir, ec);
  if (resume) {
    // The same command for the first and every later launch of a job is --resume auto.
    const std::string start_instead =
        command_on_trained_run.empty()
            ? "; to start a run there, or continue one whichever it holds, use --resume auto"
            : "; '" + command_on_trained_run + "' works on a trained run: name the folder its training wrote with --run-dir";
    if (!exists || !fs::is_directory(dir, ec))
      throw std::runtime_error("--resume: run folder '" + dir.string() + "' does not exist" + start_instead);
    if (!fs::exists(dir / "config.json", ec))
      throw std::runtime_error("--resume: '" + dir.string() + "' holds no run (no config.json)" +
                               (fs::is_empty(dir, ec) ? start_instead : std::string()));
    return;
  }
  if (exists) {
    if (!fs::is_directory(dir, ec)) throw std::runtime_error("--run-dir '" + dir.string() + "' is not a folder");
    if (!fs::is_empty(dir, ec))
      throw std::runtime_error(
          holds_run(dir) ? "run folder '" + dir.string() +
                               "' already holds a run; pass --resume (or --resume auto) to continue it, or choose "
                               "another --run-dir"
                         : "run folder '" + dir.string() +
                               "' holds files but no run (no config.json), which a new run could overwrite; choose "
                               "another --run-dir");
  }
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create run folder '" + dir.string() + "': " + ec.message());
}

bool holds_run(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "config.json", ec);
}

fs::path make_command_dir(const fs::path& run_dir, const std::string& command) {
  const fs::path parent = run_dir / "commands";
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) throw std::runtime_error("cannot create '" + parent.string() + "': " + ec.message());
  for (int n = 1;; ++n) {
    const fs::path dir = parent / (command + "-" + std::to_string(n));
    if (fs::create_directory(dir, ec)) return dir;  // false when it exists: another command's
    if (ec) throw std::runtime_error("cannot create '" + dir.string() + "': " + ec.message());
  }
}

bool holds_only_host_records(const fs::path& dir) {
  static const std::set<std::string> records = {"config.json",  "plan.json",   "probe.json",      "log.txt",
                                                "metrics.jsonl", "metrics.csv", "summary.json",    "telemetry.jsonl",
                                                "tensorboard", "metrics.superseded.json"};
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!records.count(name) && name.rfind("events.out.tfevents.", 0) != 0) return false;  // or TensorBoard's
  }
  return !ec;
}

bool holds_checkpoint(const fs::path& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir / "checkpoints", ec))
    if (entry.is_regular_file(ec) && entry.path().extension() == ".ckpt") return true;
  return false;
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
