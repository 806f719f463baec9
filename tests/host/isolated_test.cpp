#include "plugins/isolated.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>

namespace mlhost {
namespace {

using namespace std::chrono_literals;
using Status = IsolatedOutcome::Status;

TEST(Isolated, ReturnsPayloadsInOrder) {
  auto out = run_isolated({[] { return std::string("one"); }, [] { return std::string(100000, 'x'); }}, 5000ms);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[0].ok());
  EXPECT_EQ(out[0].payload, "one");
  EXPECT_EQ(out[1].payload.size(), 100000u) << "payloads larger than a pipe buffer arrive whole";
}

TEST(Isolated, CrashAbortExitAndThrowAreReportedNotFatal) {
  auto out = run_isolated({[]() -> std::string { std::raise(SIGSEGV); return ""; },
                           []() -> std::string {
                             std::fprintf(stderr, "about to abort\n");
                             std::abort();
                           },
                           []() -> std::string { ::_exit(7); },
                           []() -> std::string { throw std::runtime_error("boom"); },
                           [] { return std::string("fine"); }},
                          5000ms);
  EXPECT_EQ(out[0].status, Status::kSignaled);
  EXPECT_EQ(out[0].signal, SIGSEGV);
  EXPECT_NE(out[0].failure_reason().find("crashed with signal 11"), std::string::npos) << out[0].failure_reason();
  EXPECT_EQ(out[1].status, Status::kSignaled);
  EXPECT_NE(out[1].failure_reason().find("aborted with signal 6"), std::string::npos);
  EXPECT_NE(out[1].failure_reason().find("about to abort"), std::string::npos) << "stderr tail is kept";
  EXPECT_EQ(out[2].status, Status::kExited);
  EXPECT_EQ(out[2].exit_code, 7);
  EXPECT_EQ(out[3].status, Status::kExited);
  EXPECT_NE(out[3].failure_reason().find("boom"), std::string::npos);
  EXPECT_TRUE(out[4].ok());
}

TEST(Isolated, HangingJobsAreKilledAtTheTimeoutInParallel) {
  const auto start = std::chrono::steady_clock::now();
  auto hang = []() -> std::string {
    for (;;) ::pause();
  };
  auto out = run_isolated({hang, hang, hang, [] { return std::string("quick"); }}, 400ms);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_LT(elapsed, 2000ms) << "three hangs must cost one timeout, not three";
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(out[i].status, Status::kTimedOut);
    EXPECT_NE(out[i].failure_reason().find("did not answer within 400 ms"), std::string::npos);
  }
  EXPECT_TRUE(out[3].ok());
  EXPECT_LT(out[3].elapsed_ms, 400);
}

TEST(Isolated, GrandchildrenOfATimedOutJobAreKilled) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  auto out = run_isolated({[&]() -> std::string {
                            pid_t grandchild = ::fork();
                            if (grandchild == 0) {
                              for (;;) ::pause();
                            }
                            ::write(fds[1], &grandchild, sizeof grandchild);
                            for (;;) ::pause();
                          }},
                          300ms);
  pid_t grandchild = 0;
  ASSERT_EQ(::read(fds[0], &grandchild, sizeof grandchild), static_cast<ssize_t>(sizeof grandchild));
  ::close(fds[0]);
  ::close(fds[1]);
  EXPECT_EQ(out[0].status, Status::kTimedOut);
  // The grandchild was killed with the group; it is a zombie of init or gone, never running.
  std::this_thread::sleep_for(100ms);
  FILE* f = std::fopen(("/proc/" + std::to_string(grandchild) + "/stat").c_str(), "r");
  if (f) {
    int pid;
    char comm[256], state = '?';
    std::fscanf(f, "%d %255s %c", &pid, comm, &state);
    std::fclose(f);
    EXPECT_TRUE(state == 'Z' || state == 'X') << "grandchild still in state " << state;
  }
}

}  // namespace
}  // namespace mlhost
