#include "run/host_log.hpp"

#include <algorithm>
#include <deque>
#include <fstream>
#include <memory>
#include <mutex>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

namespace mlhost::host_log {
namespace fs = std::filesystem;

namespace {

// The worker's lines start with its elapsed seconds ("[12.3] [info] ..."); the host's say
// "host" and the clock time, so the two read apart in one file.
constexpr const char* kPattern = "[host %H:%M:%S.%e] [%l] %v";
// Lines kept before the folder exists: a host logs a few dozen before a run starts.
constexpr size_t kKeptLines = 2000;

class RunLogSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  void attach(const fs::path& run_dir) {
    std::lock_guard<std::mutex> lock(mutex_);
    run_dir_ = run_dir;
    attached_ = true;
    out_.close();
  }
  void detach() {
    std::lock_guard<std::mutex> lock(mutex_);
    attached_ = false;
    out_.close();
    kept_.clear();
  }
  void write_raw(const std::string& line) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (attached_) put(line);
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);
    put(fmt::to_string(formatted));
  }
  void flush_() override {
    if (out_.is_open()) out_.flush();
  }

 private:
  // Appends a whole line (the worker appends to the same file; one write per line keeps
  // them from interleaving), or keeps it while there is no folder to write to.
  void put(const std::string& line) {
    if (!out_.is_open() && attached_) {
      std::error_code ec;
      if (fs::is_directory(run_dir_, ec)) out_.open(run_dir_ / "log.txt", std::ios::app | std::ios::binary);
      if (out_.is_open()) {
        for (const std::string& kept : kept_) out_ << kept;
        kept_.clear();
      }
    }
    if (out_.is_open()) {
      out_ << line << std::flush;
      return;
    }
    kept_.push_back(line);
    if (kept_.size() > kKeptLines) kept_.pop_front();
  }

  fs::path run_dir_;
  bool attached_ = false;
  std::ofstream out_;
  std::deque<std::string> kept_;
};

std::shared_ptr<RunLogSink>& sink() {
  static std::shared_ptr<RunLogSink> instance;
  return instance;
}

}  // namespace

void install() {
  auto s = std::make_shared<RunLogSink>();
  s->set_formatter(std::make_unique<spdlog::pattern_formatter>(kPattern));
  spdlog::default_logger()->sinks().push_back(s);
  sink() = s;
}

void attach(const fs::path& run_dir) {
  if (sink()) sink()->attach(run_dir);
}

void detach() {
  if (sink()) sink()->detach();
}

void write_line(const std::string& level, const std::string& text) {
  if (!sink()) return;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    sink()->write_raw("[host] [" + level + "] " + text.substr(start, end - start) + "\n");
    start = end + 1;
  }
}

}  // namespace mlhost::host_log
