// Training speed recorded automatically: samples/s and steps/s over fixed time windows.
//
//   mlh::rt::ThroughputMeter speed(ctx);     // emits through ctx.metric every 10 s
//   for (...) { train_step(batch); speed.record_step(batch_size); }
//   speed.flush();                           // the last, partial window
//
// The metric and clock are plain callbacks, so the runtime's parts can be used (and tested)
// without a host; the RunContext constructors wire them to the host.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <mlh/plugin.hpp>

namespace mlh::rt {

// Receives one metric value at a training step, like mlh::RunContext::metric.
using MetricSink = std::function<void(const std::string& name, double value, int64_t step)>;
// Receives a warning, like mlh::RunContext::warn.
using WarnSink = std::function<void(const std::string& message)>;
// Seconds on a monotonic clock; injectable so that tests control time.
using Clock = std::function<double()>;

// std::chrono::steady_clock in seconds.
double steady_seconds();

// Sinks that forward to the host. They keep a copy of `ctx`, valid for the whole run.
MetricSink metric_sink(const mlh::RunContext& ctx);
WarnSink warn_sink(const mlh::RunContext& ctx);

class ThroughputMeter {
 public:
  // Emits "perf/samples_per_s" and "perf/steps_per_s" once at least `interval_s` seconds have
  // passed since the last emission (or construction), averaged over that window.
  explicit ThroughputMeter(MetricSink sink, double interval_s = 10.0, Clock clock = steady_seconds);
  explicit ThroughputMeter(const mlh::RunContext& ctx, double interval_s = 10.0,
                           Clock clock = steady_seconds);

  // One training step of `samples` samples just finished. `step` labels the metrics; by
  // default the number of steps recorded so far (pass the global step after a resume).
  void record_step(int64_t samples, std::optional<int64_t> step = std::nullopt);

  // Emits the window in progress if it holds any step, e.g. at the end of training.
  void flush();

 private:
  void emit(double now);

  MetricSink sink_;
  double interval_s_;
  Clock clock_;
  double window_start_;
  int64_t window_steps_ = 0;
  int64_t window_samples_ = 0;
  int64_t steps_ = 0;       // all steps recorded
  int64_t last_step_ = 0;   // label of the latest step
};

}  // namespace mlh::rt
