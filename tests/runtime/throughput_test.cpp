#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include <mlh/runtime/throughput.hpp>

namespace {

struct Emitted {
  std::string name;
  double value;
  int64_t step;
};

TEST(ThroughputMeter, EmitsRatesOverEachWindow) {
  double now = 100.0;
  std::vector<Emitted> emitted;
  mlh::rt::ThroughputMeter meter(
      [&](const std::string& name, double value, int64_t step) { emitted.push_back({name, value, step}); },
      10.0, [&] { return now; });

  for (int i = 0; i < 4; ++i) {  // 4 steps of 32 samples over 8 s: no window complete yet
    now += 2.0;
    meter.record_step(32);
  }
  EXPECT_TRUE(emitted.empty());
  now += 2.0;  // the fifth step ends the 10 s window
  meter.record_step(32);
  ASSERT_EQ(emitted.size(), 2u);
  EXPECT_EQ(emitted[0].name, "perf/samples_per_s");
  EXPECT_DOUBLE_EQ(emitted[0].value, 5 * 32 / 10.0);
  EXPECT_EQ(emitted[1].name, "perf/steps_per_s");
  EXPECT_DOUBLE_EQ(emitted[1].value, 0.5);
  EXPECT_EQ(emitted[1].step, 5);

  // The next window counts only its own steps.
  now += 20.0;
  meter.record_step(100, /*step=*/1000);
  ASSERT_EQ(emitted.size(), 4u);
  EXPECT_DOUBLE_EQ(emitted[2].value, 5.0);
  EXPECT_DOUBLE_EQ(emitted[3].value, 0.05);
  EXPECT_EQ(emitted[3].step, 1000);

  // flush() emits the partial window, and nothing when it is empty.
  now += 1.0;
  meter.record_step(8);
  meter.flush();
  ASSERT_EQ(emitted.size(), 6u);
  EXPECT_DOUBLE_EQ(emitted[4].value, 8.0);
  meter.flush();
  EXPECT_EQ(emitted.size(), 6u);
}

// A host that records what the plugin side sends through mlh::RunContext.
struct FakeHost {
  std::vector<Emitted> metrics;
  std::vector<std::string> warnings;
};

TEST(ThroughputMeter, ReportsThroughTheRunContext) {
  FakeHost fake;
  mlh_host_callbacks host{};
  host.struct_size = sizeof(host);
  host.host_data = &fake;
  host.log = [](void* h, int32_t level, const char* m) {
    if (level == MLH_LOG_WARN) static_cast<FakeHost*>(h)->warnings.push_back(m);
  };
  host.metric = [](void* h, const char* name, double value, int64_t step) {
    static_cast<FakeHost*>(h)->metrics.push_back({name, value, step});
  };
  host.progress = [](void*, int64_t, int64_t, const char*) {};
  host.should_stop = [](void*) { return 0; };
  host.summary = [](void*, const char*) {};
  mlh_run_context raw{};
  raw.struct_size = sizeof(raw);
  raw.host = &host;
  const mlh::RunContext ctx(raw);

  double now = 0;
  mlh::rt::ThroughputMeter meter(ctx, 1.0, [&] { return now; });
  now = 2;
  meter.record_step(10);
  ASSERT_EQ(fake.metrics.size(), 2u);
  EXPECT_EQ(fake.metrics[0].name, "perf/samples_per_s");
  EXPECT_DOUBLE_EQ(fake.metrics[0].value, 5.0);
  EXPECT_EQ(fake.metrics[0].step, 1);

  mlh::rt::warn_sink(ctx)("low memory");
  EXPECT_EQ(fake.warnings, std::vector<std::string>{"low memory"});
}

TEST(ThroughputMeter, RejectsANonPositiveInterval) {
  auto sink = [](const std::string&, double, int64_t) {};
  EXPECT_THROW(mlh::rt::ThroughputMeter(sink, 0.0), std::invalid_argument);
}

}  // namespace
