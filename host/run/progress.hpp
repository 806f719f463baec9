// How a run's progress is shown: a bar with rate and ETA redrawn in place on a terminal,
// plain lines at an interval otherwise (logs, CI).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace mlhost {

class ProgressDisplay {
 public:
  using Clock = std::chrono::steady_clock;

  // `terminal`: redraw one line in place; otherwise a plain line every `plain_interval`.
  ProgressDisplay(std::FILE* out, bool terminal, std::chrono::milliseconds plain_interval = std::chrono::seconds(10));

  // A progress report from the algorithm; draws when it is time to.
  void update(int64_t done, int64_t total, const std::string& unit, Clock::time_point now = Clock::now());
  // Clears the bar so that another line (a log message) can be printed; the next update
  // draws it again.
  void clear();

  // "45% 450/1000 steps, 120.3 steps/s, ETA 0:05" (ETA only when total and rate are known).
  static std::string describe(int64_t done, int64_t total, const std::string& unit, std::optional<double> rate);
  // "1:02:03" or "2:03".
  static std::string format_duration(double seconds);

 private:
  std::optional<double> rate(int64_t done, Clock::time_point now) const;

  std::FILE* out_;
  bool terminal_;
  std::chrono::milliseconds plain_interval_;
  bool bar_shown_ = false;
  std::optional<std::pair<int64_t, Clock::time_point>> first_;  // the first report: where rates start
  Clock::time_point last_draw_{};
};

}  // namespace mlhost
