// Training speed over fixed time windows (see throughput.hpp).
#include <chrono>
#include <stdexcept>
#include <utility>

#include <mlh/runtime/throughput.hpp>

namespace mlh::rt {

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

MetricSink metric_sink(const mlh::RunContext& ctx) {
  return [ctx](const std::string& name, double value, int64_t step) { ctx.metric(name, value, step); };
}

WarnSink warn_sink(const mlh::RunContext& ctx) {
  return [ctx](const std::string& message) { ctx.warn(message); };
}

ThroughputMeter::ThroughputMeter(MetricSink sink, double interval_s, Clock clock)
    : sink_(std::move(sink)), interval_s_(interval_s), clock_(std::move(clock)) {
  if (!sink_ || !clock_) throw std::invalid_argument("ThroughputMeter: missing sink or clock");
  if (!(interval_s_ > 0)) throw std::invalid_argument("ThroughputMeter: interval must be positive");
  window_start_ = clock_();
}

ThroughputMeter::ThroughputMeter(const mlh::RunContext& ctx, double interval_s, Clock clock)
    : ThroughputMeter(metric_sink(ctx), interval_s, std::move(clock)) {}

void ThroughputMeter::record_step(int64_t samples, std::optional<int64_t> step) {
  ++steps_;
  ++window_steps_;
  window_samples_ += samples;
  last_step_ = step.value_or(steps_);
  const double now = clock_();
  if (now - window_start_ >= interval_s_) emit(now);
}

void ThroughputMeter::flush() {
  const double now = clock_();
  // A window of no measurable length has no rate.
  if (window_steps_ > 0 && now > window_start_) emit(now);
}

void ThroughputMeter::emit(double now) {
  const double seconds = now - window_start_;
  sink_("perf/samples_per_s", static_cast<double>(window_samples_) / seconds, last_step_);
  sink_("perf/steps_per_s", static_cast<double>(window_steps_) / seconds, last_step_);
  window_start_ = now;
  window_steps_ = 0;
  window_samples_ = 0;
}

}  // namespace mlh::rt
