// telemetry on the test process itself.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include "cpu_telemetry.hpp"

namespace {

int64_t statm_resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * ::sysconf(_SC_PAGESIZE);
}

// Keeps this thread on a CPU for `duration`.
void spin_for(std::chrono::milliseconds duration) {
  volatile uint64_t sink = 0;
  auto end = std::chrono::steady_clock::now() + duration;
  while (std::chrono::steady_clock::now() < end)
    for (int i = 0; i < 10000; ++i) sink = sink + static_cast<uint64_t>(i);
}

TEST(CpuTelemetry, ReportsResidentMemoryAndTotal) {
  mlh::cpu::ProcessMonitor monitor;
  mlh::TelemetrySample sample = monitor.sample(::getpid());
  int64_t expected = statm_resident_bytes();
  ASSERT_TRUE(sample.memory_used_bytes.has_value());
  EXPECT_GT(*sample.memory_used_bytes, 0);
  // Both read statm within microseconds; allow for a few pages of allocation between.
  EXPECT_NEAR(static_cast<double>(*sample.memory_used_bytes), static_cast<double>(expected), 1 << 20);
  ASSERT_TRUE(sample.memory_total_bytes.has_value());
  double physical = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  EXPECT_NEAR(static_cast<double>(*sample.memory_total_bytes), physical, physical * 0.01);
  EXPECT_FALSE(sample.temperature_celsius.has_value());
  EXPECT_FALSE(sample.power_watts.has_value());
}

TEST(CpuTelemetry, FirstSampleIsTheAverageSinceStart) {
  mlh::cpu::ProcessMonitor monitor;
  mlh::TelemetrySample sample = monitor.sample(::getpid());
  ASSERT_TRUE(sample.utilization_percent.has_value());
  EXPECT_GE(*sample.utilization_percent, 0.0);
  // One thread has been running: at most one core, with slack for clock-tick rounding.
  EXPECT_LE(*sample.utilization_percent, 100.0 * static_cast<double>(::sysconf(_SC_NPROCESSORS_ONLN)) + 10.0);
}

TEST(CpuTelemetry, BusyLoopShowsBetweenTwoSamples) {
  mlh::cpu::ProcessMonitor monitor;
  monitor.sample(::getpid());
  spin_for(std::chrono::milliseconds(250));
  mlh::TelemetrySample sample = monitor.sample(::getpid());
  ASSERT_TRUE(sample.utilization_percent.has_value());
  EXPECT_GT(*sample.utilization_percent, 20.0);
}

TEST(CpuTelemetry, IdleTimeShowsAsLowUse) {
  mlh::cpu::ProcessMonitor monitor;
  monitor.sample(::getpid());
  ::usleep(300000);
  mlh::TelemetrySample sample = monitor.sample(::getpid());
  ASSERT_TRUE(sample.utilization_percent.has_value());
  EXPECT_LT(*sample.utilization_percent, 20.0);
}

TEST(CpuTelemetry, UnknownProcessIsAnInvalidArgument) {
  mlh::cpu::ProcessMonitor monitor;
  // Above any pid_max Linux allows (2^22).
  for (int64_t pid : {int64_t{2147483647}, int64_t{0}, int64_t{-5}}) {
    try {
      monitor.sample(pid);
      ADD_FAILURE() << "no error for pid " << pid;
    } catch (const mlh::Error& e) {
      EXPECT_EQ(e.code(), MLH_ERR_INVALID_ARGUMENT);
      EXPECT_EQ(std::string(e.what()), "no process " + std::to_string(pid));
    }
  }
}

}  // namespace
