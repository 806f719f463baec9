#include "run/run_sink.hpp"

#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <optional>
#include <stdexcept>
#include <utility>

#include <mlh/mlh_abi.h>
#include <spdlog/spdlog.h>

#include "common/csv.hpp"
#include "common/files.hpp"

namespace mlhost {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

double wall_time() {
  struct timespec ts {};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

RunSink::RunSink(const fs::path& dir, bool console, std::string console_prefix, bool resumed)
    : dir_(dir),
      superseding_(resumed),
      log_(dir / "log.txt", std::ios::app),
      jsonl_(dir / "metrics.jsonl", std::ios::app),
      events_(std::make_unique<EventFileWriter>(event_dir(dir))),
      progress_(stderr, ::isatty(STDERR_FILENO) == 1),
      console_(console),
      console_prefix_(std::move(console_prefix)) {
  const bool new_csv = !fs::exists(dir / "metrics.csv") || fs::file_size(dir / "metrics.csv") == 0;
  csv_.open(dir / "metrics.csv", std::ios::app);
  if (new_csv) csv_ << "step,name,value,time\n" << std::flush;
  if (!log_ || !jsonl_ || !csv_) throw std::runtime_error("cannot write in run folder '" + dir.string() + "'");
}

namespace {
const char* level_name(int32_t& level) {
  static const char* names[] = {"trace", "debug", "info", "warn", "error"};
  level = level < MLH_LOG_TRACE ? MLH_LOG_TRACE : level > MLH_LOG_ERROR ? MLH_LOG_ERROR : level;
  return names[level];
}
}  // namespace

void RunSink::record(int32_t level, const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  log_ << "[" << seconds() << "] [" << level_name(level) << "] " << message << "\n" << std::flush;
}

void RunSink::log(int32_t level, const char* message) {
  std::lock_guard<std::mutex> lock(mu_);
  int32_t lv = level;
  log_ << "[" << seconds() << "] [" << level_name(lv) << "] " << (message ? message : "") << "\n" << std::flush;
  if (!console_ && lv < MLH_LOG_WARN) return;
  progress_.clear();  // a log line must not land in the middle of the bar
  spdlog::log(static_cast<spdlog::level::level_enum>(lv), "{}{}", console_prefix_, message ? message : "");
}

namespace {

// The byte length of `file`'s lines before the first whose step is `step` or later (`step_of`
// reads a line's step; a line it cannot read is kept). Launches append, each from its
// checkpoint on, so those lines are the file's end.
template <class StepOf>
std::streamoff kept_length(const fs::path& file, int64_t step, StepOf step_of, bool header) {
  std::ifstream in(file, std::ios::binary);
  std::streamoff kept = 0;
  std::string line;
  for (bool first = true; std::getline(in, line); first = false) {
    if (in.eof()) break;  // an unfinished last line: a crash mid-write; dropped with the rest
    if (!(header && first)) {
      const std::optional<int64_t> s = step_of(line);
      if (s && *s >= step) break;
    }
    kept += static_cast<std::streamoff>(line.size()) + 1;
  }
  return kept;
}

// The `time` of the last metrics.jsonl row in its first `length` bytes (0 without one): where
// a resumed run's elapsed time goes on from.
double last_time(const fs::path& jsonl, std::streamoff length) {
  std::ifstream in(jsonl, std::ios::binary);
  std::string line, last;
  std::streamoff read = 0;
  while (read < length && std::getline(in, line)) {
    read += static_cast<std::streamoff>(line.size()) + 1;
    if (!line.empty()) last = line;
  }
  const json m = json::parse(last, nullptr, false);
  return m.is_object() && m.value("time", json()).is_number() ? m["time"].get<double>() : 0.0;
}

}  // namespace

void RunSink::supersede_from(int64_t step) {
  const fs::path jsonl = dir_ / "metrics.jsonl", csv = dir_ / "metrics.csv";
  const std::streamoff jsonl_kept = kept_length(jsonl, step, [](const std::string& line) -> std::optional<int64_t> {
    const json m = json::parse(line, nullptr, false);
    if (!m.is_object() || !m.value("step", json()).is_number_integer()) return std::nullopt;
    return m["step"].get<int64_t>();
  }, false);
  const std::streamoff csv_kept = kept_length(csv, step, [](const std::string& line) -> std::optional<int64_t> {
    char* end = nullptr;
    const long long s = std::strtoll(line.c_str(), &end, 10);
    if (end == line.c_str() || *end != ',') return std::nullopt;
    return s;
  }, true);
  // The resumed launch's times go on from the last row it keeps (the run's time at its checkpoint).
  time_offset_ = last_time(jsonl, jsonl_kept) - seconds();
  std::error_code ec;
  const auto jsonl_size = fs::file_size(jsonl, ec);
  if (ec || static_cast<uintmax_t>(jsonl_kept) >= jsonl_size) {
    events_->add_session_start(step, wall_time());
    return;
  }
  jsonl_.close();
  csv_.close();
  // The tracker sending metrics.jsonl (run/tracking) picks up from here: what it sent past
  // this point was the dropped attempt's.
  write_file_atomically(dir_ / "metrics.superseded.json",
                        json{{"step", step}, {"jsonl_bytes", static_cast<int64_t>(jsonl_kept)}}.dump() + "\n");
  fs::resize_file(jsonl, static_cast<uintmax_t>(jsonl_kept));
  fs::resize_file(csv, static_cast<uintmax_t>(csv_kept));
  jsonl_.open(jsonl, std::ios::app);
  csv_.open(csv, std::ios::app);
  if (!jsonl_ || !csv_) throw std::runtime_error("cannot write in run folder '" + dir_.string() + "'");
  events_->add_session_start(step, wall_time());
  log_ << "[" << seconds() << "] [info] metrics: the rows of step " << step
       << " on that an earlier attempt logged past its checkpoint are dropped (this launch logs them again)\n"
       << std::flush;
}

void RunSink::metric(const char* name, double value, int64_t step) {
  std::lock_guard<std::mutex> lock(mu_);
  if (superseding_) {
    superseding_ = false;
    supersede_from(step);
  }
  const std::string n = name ? name : "";
  const double t = time_offset_ + seconds();
  const double wall = wall_time();
  // wall_time (Unix seconds): the point's own clock time, which a tracking server's timeline
  // needs (run/tracking); "time" is the run's elapsed time, across the launches of a resumed run.
  jsonl_ << json{{"step", step}, {"name", n}, {"value", value}, {"time", t}, {"wall_time", wall}}.dump() << "\n"
         << std::flush;
  csv_ << step << "," << csv_field(n) << "," << value << "," << t << "\n" << std::flush;
  events_->add_scalar(n, value, step, wall);
  last_metrics_[n] = value;
}

void RunSink::progress(int64_t done, int64_t total, const char* unit) {
  std::lock_guard<std::mutex> lock(mu_);
  if (console_) progress_.update(done, total, unit ? unit : "");
}

void RunSink::summary(const char* summary_json) {
  std::lock_guard<std::mutex> lock(mu_);
  json parsed = json::parse(summary_json ? summary_json : "null", nullptr, false);
  result_ = parsed.is_discarded() ? json(summary_json ? summary_json : "") : parsed;
}

void RunSink::hparams_start(const json& hparams) {
  std::lock_guard<std::mutex> lock(mu_);
  hparams_ = std::make_unique<HparamsSessionFile>(events_->path().parent_path());
  hparams_->start(hparams, wall_time());
}

void RunSink::hparams_end(HparamsStatus status) {
  std::lock_guard<std::mutex> lock(mu_);
  if (hparams_) hparams_->end(status, wall_time());
}

json RunSink::result() const {
  std::lock_guard<std::mutex> lock(mu_);
  return result_;
}

json RunSink::last_metrics() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_metrics_;
}

double RunSink::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

}  // namespace mlhost
