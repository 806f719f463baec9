#include "run/progress.hpp"

#include <cmath>

namespace mlhost {

namespace {
constexpr int kBarWidth = 24;
// A terminal redraw more often than this only costs time.
constexpr std::chrono::milliseconds kTerminalInterval{100};
}  // namespace

ProgressDisplay::ProgressDisplay(std::FILE* out, bool terminal, std::chrono::milliseconds plain_interval)
    : out_(out), terminal_(terminal), plain_interval_(plain_interval) {}

std::string ProgressDisplay::format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  long s = std::lround(seconds);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

std::string ProgressDisplay::describe(int64_t done, int64_t total, const std::string& unit, std::optional<double> rate) {
  char buf[160];
  std::string text;
  if (total > 0) {
    std::snprintf(buf, sizeof buf, "%3.0f%% %lld/%lld %s", 100.0 * static_cast<double>(done) / static_cast<double>(total),
                  static_cast<long long>(done), static_cast<long long>(total), unit.c_str());
  } else {
    std::snprintf(buf, sizeof buf, "%lld %s", static_cast<long long>(done), unit.c_str());
  }
  text = buf;
  if (rate) {
    std::snprintf(buf, sizeof buf, ", %.1f %s/s", *rate, unit.c_str());
    text += buf;
    if (total > 0 && *rate > 0 && done <= total)
      text += ", ETA " + format_duration(static_cast<double>(total - done) / *rate);
  }
  return text;
}

std::optional<double> ProgressDisplay::rate(int64_t done, Clock::time_point now) const {
  if (!first_) return std::nullopt;
  const double seconds = std::chrono::duration<double>(now - first_->second).count();
  if (seconds <= 0 || done <= first_->first) return std::nullopt;
  return static_cast<double>(done - first_->first) / seconds;
}

void ProgressDisplay::update(int64_t done, int64_t total, const std::string& unit, Clock::time_point now) {
  if (!first_) first_ = std::make_pair(done, now);
  const bool finished = total > 0 && done >= total;
  const auto interval = terminal_ ? std::chrono::duration_cast<std::chrono::milliseconds>(kTerminalInterval) : plain_interval_;
  if (!finished && last_draw_ != Clock::time_point{} && now - last_draw_ < interval) return;
  last_draw_ = now;
  const std::string text = describe(done, total, unit, rate(done, now));
  if (!terminal_) {
    std::fprintf(out_, "progress %s\n", text.c_str());
  } else {
    std::string bar(kBarWidth, ' ');
    if (total > 0) {
      const auto filled = static_cast<size_t>(kBarWidth * std::min<double>(1.0, static_cast<double>(done) / total));
      bar.replace(0, filled, filled, '#');
    }
    std::fprintf(out_, "\r\033[K[%s] %s%s", bar.c_str(), text.c_str(), finished ? "\n" : "");
    bar_shown_ = !finished;
  }
  std::fflush(out_);
}

void ProgressDisplay::clear() {
  if (!bar_shown_) return;
  std::fprintf(out_, "\r\033[K");
  std::fflush(out_);
  bar_shown_ = false;
}

}  // namespace mlhost
