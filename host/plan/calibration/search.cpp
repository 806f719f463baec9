#include "plan/calibration/search.hpp"

#include <unistd.h>

#include <algorithm>

#include <spdlog/spdlog.h>

#include "common/stop_request.hpp"
#include "plan/allocator.hpp"
#include "plan/calibration/cache.hpp"

namespace mlhost {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// The plan's "allocator" object for `name`, or nothing where it is not installed.
std::optional<json> installed_allocator(const CalibrationSearch& s, const std::string& name) {
  return allocator_object(name, s.allocator_search_path ? s.allocator_search_path->c_str() : nullptr,
                          s.allocator_search_system);
}

// The bf16 candidate's measurement, its quality check included, against one fp32 candidate's.
constexpr int kPrecisionShare = 3;

class Calibrator {
 public:
  Calibrator(const CalibrationSearch& search, int planned)
      : s_(search),
        start_(Clock::now()),
        deadline_(start_ + std::chrono::milliseconds(static_cast<int64_t>(search.bound_seconds * 1000))),
        // Each candidate times its step for this long (after loading LibTorch and a warm-up):
        // long enough for a stable median, short enough that every candidate fits the bound.
        step_seconds_(std::clamp(search.bound_seconds / (3.0 * std::max(planned, 1)), 0.3, 2.0)),
        planned_(planned) {}

  // Runs the algorithm's calibrate command with `settings`; its reply, or nothing when it
  // could not be measured (not installed, failed, or out of time; `stopped()` says which).
  // `room_for_precision`: skip this candidate unless the bf16 measurement that comes last
  // (with its quality check, kPrecisionShare times a measurement) still fits after it, so that
  // the time bound never cuts bf16 out for one more allocator or thread count.
  std::optional<json> measure(const CalibrationSettings& settings, bool check_precision,
                              bool room_for_precision = false) {
    if (first_stop_signal() != 0) stopped_ = stop_requested_ = true;
    if (stopped_) return std::nullopt;
    const auto allocator_plan = installed_allocator(s_, settings.allocator);
    if (!allocator_plan) return std::nullopt;  // not installed here
    if (room_for_precision && last_duration_ &&
        Clock::now() + *last_duration_ * (1 + kPrecisionShare) > deadline_) {
      skipped_ = true;
      return std::nullopt;
    }
    if (last_duration_ && Clock::now() + *last_duration_ > deadline_) {
      stopped_ = true;
      return std::nullopt;
    }
    json plan = s_.plan;
    plan["allocator"] = *allocator_plan;
    plan["threads"]["intra_op"] = settings.threads;
    plan["precision"] = settings.precision;
    plan["calibration"] = {{"seconds", step_seconds_}};
    if (check_precision) plan["calibration"]["check_precision"] = settings.precision;

    const Clock::time_point t0 = Clock::now();
    ++runs_;
    const CalibrateOutcome outcome = s_.calibrate(plan, deadline_);
    last_duration_ = Clock::now() - t0;
    // A stop request during the measurement: its figure (if any) is not kept, nor is anything
    // after it measured.
    if (first_stop_signal() != 0) {
      stopped_ = stop_requested_ = true;
      return std::nullopt;
    }
    if (outcome.timed_out) {
      stopped_ = true;
      return std::nullopt;
    }
    const json& result = outcome.result;
    if (!outcome.error.empty() || !result.is_object() || !result.contains("calibration") ||
        !result["calibration"].is_object() || result["calibration"].value("throughput", 0.0) <= 0) {
      last_error_ = outcome.error.empty() ? "the calibrate command gave no measurement" : outcome.error;
      spdlog::warn("calibration: {}: {}", settings.describe(), last_error_);
      report_progress();
      return std::nullopt;
    }
    CalibrationMeasurement m{settings, result["calibration"]["throughput"].get<double>()};
    measurements_.push_back(m);
    if (unit_.empty()) {
      unit_ = result["calibration"].value("unit", "items");
      benchmark_ = result["calibration"].value("benchmark", "step");
    }
    spdlog::info("calibration: {}: {:.4g} {}/s", settings.describe(), m.throughput, unit_);
    report_progress();
    return result;
  }

  // The display's last report: every run planned counts as done.
  void finish() {
    if (s_.progress) s_.progress(planned_, planned_);
  }

  // Of the measurements with `same(settings)`, the fastest by the margin rule.
  template <class Filter>
  CalibrationSettings pick(const CalibrationSettings& incumbent, Filter same) const {
    std::vector<CalibrationMeasurement> subset;
    for (const auto& m : measurements_)
      if (same(m.settings)) subset.push_back(m);
    return pick_fastest(subset, incumbent, kCalibrationMargin);
  }

  bool stopped() const { return stopped_ || skipped_; }  // some candidate not measured for time
  bool stop_requested() const { return stop_requested_; }  // stopped by the user or a scheduler
  bool measured(const CalibrationSettings& s) const {
    return std::any_of(measurements_.begin(), measurements_.end(), [&](const auto& m) { return m.settings == s; });
  }
  const std::vector<CalibrationMeasurement>& measurements() const { return measurements_; }
  const std::string& last_error() const { return last_error_; }
  const std::string& unit() const { return unit_; }
  const std::string& benchmark() const { return benchmark_; }
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

 private:
  void report_progress() {
    if (s_.progress) s_.progress(std::min(runs_, planned_ - 1), planned_);
  }

  const CalibrationSearch& s_;
  Clock::time_point start_, deadline_;
  double step_seconds_;
  int planned_;
  int runs_ = 0;
  bool stopped_ = false, stop_requested_ = false, skipped_ = false;
  std::optional<Clock::duration> last_duration_;
  std::vector<CalibrationMeasurement> measurements_;
  std::string last_error_, unit_, benchmark_;
};

}  // namespace

CalibrationSearchResult search_calibration(const CalibrationSearch& in, const CalibrationKey& key) {
  const CalibrationSettings base{in.plan["allocator"]["name"].get<std::string>(),
                                 in.plan["threads"]["intra_op"].get<int>(), in.plan["precision"].get<std::string>()};
  const int cores =
      in.device->compute_units > 0 ? in.device->compute_units : static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  std::vector<int> threads;
  if (in.vary_threads)
    for (int t : thread_candidates(cores))
      if (t != base.threads) threads.push_back(t);
  // The plan's own allocator first (what every candidate must beat; a calibration cut short
  // by its bound still holds it), then glibc's defaults (the reference the figures are
  // compared with), then the others installed here.
  std::vector<std::string> allocators{base.allocator};
  if (in.vary_allocator)
    for (const std::string& a : allocator_names())  // glibc first
      if (a != base.allocator && installed_allocator(in, a)) allocators.push_back(a);
  const int planned = static_cast<int>(allocators.size() + threads.size()) + (in.vary_precision ? 1 : 0);
  Calibrator m(in, planned);

  spdlog::info("calibrating {} on {} (at most {:.0f} s; --no-calibrate skips this, --calibrate measures again)",
               in.algorithm, in.device->id(), in.bound_seconds);
  CalibrationSearchResult out;
  CalibrationResult result;
  result.key = key;
  const bool tries_bf16 = in.vary_precision && base.precision == "fp32";
  for (const std::string& a : allocators) m.measure({a, base.threads, base.precision}, false, tries_bf16);
  if (!m.measured(base)) {
    m.finish();
    out.failure = m.stop_requested() ? signal_name(first_stop_signal()) + " stopped it; nothing of it is kept"
                  : m.stopped()      ? "the time bound (" + std::to_string(static_cast<int>(in.bound_seconds)) +
                                    " s) ran out before the plan's own setting (" + base.describe() + ") was measured"
                  : m.last_error().empty() ? base.describe() + " could not be measured"
                                           : m.last_error();
    return out;
  }
  CalibrationSettings best = m.pick(base, [&](const CalibrationSettings& s) {
    return s.threads == base.threads && s.precision == base.precision;
  });
  if (in.vary_allocator) result.varied.push_back("allocator");

  if (in.vary_threads) {
    result.varied.push_back("threads");
    for (int t : threads) m.measure({best.allocator, t, best.precision}, false, tries_bf16);
    best = m.pick(best, [&](const CalibrationSettings& s) {
      return s.allocator == best.allocator && s.precision == best.precision;
    });
  }

  if (in.vary_precision && best.precision == "fp32") {
    result.varied.push_back("precision");
    const CalibrationSettings reduced{best.allocator, best.threads, "bf16"};
    if (std::optional<json> reply = m.measure(reduced, true)) {
      if (reply->contains("precision_check") && (*reply)["precision_check"].is_object()) {
        result.precision_check = (*reply)["precision_check"];
        if (result.precision_check.value("passed", false))
          best = m.pick(best, [&](const CalibrationSettings& s) {
            return s.allocator == best.allocator && s.threads == best.threads;
          });
      }
    }
  }

  m.finish();
  if (m.stop_requested()) {
    // Part of a calibration is no calibration: kept, it would be taken for a whole one (the
    // settings never tried would never be tried).
    out.failure = signal_name(first_stop_signal()) + " stopped it after " + std::to_string(m.measurements().size()) +
                  " measurement" + (m.measurements().size() == 1 ? "" : "s") + "; nothing of it is kept";
    return out;
  }
  result.benchmark = m.benchmark();
  result.unit = m.unit();
  result.measurements = m.measurements();
  result.chosen = best;
  result.complete = !m.stopped();
  result.seconds = m.seconds();
  result.measured_at = utc_now();
  spdlog::info("calibration of {} done in {:.0f} s: {}{}", in.algorithm, result.seconds, best.describe(),
               result.complete ? "" : " (partial: the time bound stopped it)");
  out.calibration = std::move(result);
  return out;
}

}  // namespace mlhost
