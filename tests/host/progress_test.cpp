#include "run/progress.hpp"

#include <gtest/gtest.h>

#include <cstdio>

namespace mlhost {
namespace {

using namespace std::chrono_literals;

std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) s.append(buf, n);
  return s;
}

TEST(Progress, DescribesRateAndEta) {
  EXPECT_EQ(ProgressDisplay::describe(450, 1000, "steps", 50.0), " 45% 450/1000 steps, 50.0 steps/s, ETA 0:11");
  EXPECT_EQ(ProgressDisplay::describe(5, 0, "episodes", std::nullopt), "5 episodes");
  EXPECT_EQ(ProgressDisplay::format_duration(3723), "1:02:03");
  EXPECT_EQ(ProgressDisplay::format_duration(59.6), "1:00");
}

TEST(Progress, PlainLinesAtTheIntervalAndAtTheEnd) {
  std::FILE* f = std::tmpfile();
  ProgressDisplay p(f, /*terminal=*/false, 10s);
  const auto t0 = ProgressDisplay::Clock::time_point{} + 1h;
  p.update(0, 100, "steps", t0);
  p.update(10, 100, "steps", t0 + 1s);   // too soon
  p.update(50, 100, "steps", t0 + 10s);  // interval passed: 5 steps/s, 10 s left
  p.update(100, 100, "steps", t0 + 11s); // finished: always shown
  const std::string out = contents(f);
  std::fclose(f);
  EXPECT_EQ(out,
            "progress   0% 0/100 steps\n"
            "progress  50% 50/100 steps, 5.0 steps/s, ETA 0:10\n"
            "progress 100% 100/100 steps, 9.1 steps/s, ETA 0:00\n");
}

TEST(Progress, TerminalBarRedrawsInPlaceAndClearsForLogs) {
  std::FILE* f = std::tmpfile();
  ProgressDisplay p(f, /*terminal=*/true);
  const auto t0 = ProgressDisplay::Clock::time_point{} + 1h;
  p.update(0, 4, "steps", t0);
  p.clear();
  p.update(4, 4, "steps", t0 + 2s);
  const std::string out = contents(f);
  std::fclose(f);
  EXPECT_EQ(out.rfind("\r\033[K[", 0), 0u) << out;
  EXPECT_NE(out.find("\r\033[K\r\033[K[########################] 100% 4/4 steps"), std::string::npos) << out;
  EXPECT_EQ(out.back(), '\n') << "a finished bar ends its line";
}

}  // namespace
}  // namespace mlhost
