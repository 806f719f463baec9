#include "plan/calibrator.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <spdlog/spdlog.h>

#include "cli/commands.hpp"
#include "plan/allocator.hpp"
#include "plan/calibration_cache.hpp"
#include "plugins/plugin_calls.hpp"
#include "run/progress.hpp"
#include "run/worker.hpp"

namespace mlhost {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

CalibrateOutcome run_calibrate_command(const CalibratorInputs& in, json plan, Clock::time_point deadline) {
  // A folder of its own for the worker's files (log, metrics, summary), removed after.
  std::string pattern = (fs::temp_directory_path() / "mlhost-calibration-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) throw HostError("calibration: cannot make a temporary folder in " + pattern);
  const fs::path dir = pattern;
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{dir};

  const json env = prepare_environment(*in.device_plugin, in.device->index, plan);
  WorkerSpec spec;
  spec.algorithm = *in.algorithm;
  spec.command = "calibrate";
  spec.config_json = in.config.dump();
  spec.device_json = device_to_json(*in.device).dump();
  spec.torch_device = env.contains("MLH_TORCH_DEVICE") ? env["MLH_TORCH_DEVICE"].get<std::string>() : in.device->torch_device;
  plan["worker_torch_device"] = spec.torch_device;
  spec.plan_json = plan.dump();
  for (const auto& [name, value] : env.items()) spec.environment[name] = value.get<std::string>();
  spec.run_dir = dir;
  spec.quiet = true;

  CalibrateOutcome outcome;
  const GroupOutcome group = supervise_workers({spec}, nullptr, deadline);
  if (group.killed_on_request) throw HostError("calibration stopped on request", 130);
  if (group.timed_out) {
    outcome.timed_out = true;
    return outcome;
  }
  std::ifstream in_summary(dir / "summary.json");
  const json summary = json::parse(in_summary, nullptr, /*allow_exceptions=*/false);
  outcome.result = summary.is_object() ? summary.value("result", json()) : json();
  if (group.workers[0].failed() || !outcome.result.is_object())
    outcome.error = summary.is_object() && summary.value("error", json()).is_string()
                        ? summary["error"].get<std::string>()
                        : "the calibrate command failed (" +
                              (group.workers[0].signal ? "signal " + std::to_string(group.workers[0].signal)
                                                       : "exit status " + std::to_string(group.workers[0].exit_code)) +
                              ")";
  return outcome;
}

namespace {

class Calibrator {
 public:
  Calibrator(const CalibratorInputs& in, int planned)
      : in_(in),
        start_(Clock::now()),
        deadline_(start_ + std::chrono::milliseconds(static_cast<int64_t>(in.bound_seconds * 1000))),
        // Each candidate times its step for this long (after loading LibTorch and a warm-up):
        // long enough for a stable median, short enough that every candidate fits the bound.
        step_seconds_(std::clamp(in.bound_seconds / (3.0 * std::max(planned, 1)), 0.3, 2.0)),
        planned_(planned),
        progress_(stderr, ::isatty(STDERR_FILENO) != 0, std::chrono::seconds(5)) {}

  // Runs the algorithm's calibrate command with `settings`; its reply, or nothing when it
  // could not be measured (not installed, failed, or out of time; `stopped()` says which).
  std::optional<json> measure(const CalibrationSettings& settings, bool check_precision) {
    if (stopped_) return std::nullopt;
    const auto allocator = allocator_object(settings.allocator, in_.allocator_search_path);
    if (!allocator) return std::nullopt;  // not installed here
    if (last_duration_ && Clock::now() + *last_duration_ > deadline_) {
      stopped_ = true;
      return std::nullopt;
    }
    json plan = in_.plan;
    plan["allocator"] = *allocator;
    plan["threads"]["intra_op"] = settings.threads;
    plan["precision"] = settings.precision;
    plan["calibration"] = {{"seconds", step_seconds_}};
    if (check_precision) plan["calibration"]["check_precision"] = settings.precision;

    const Clock::time_point t0 = Clock::now();
    ++runs_;
    const CalibrateOutcome outcome = run_calibrate_command(in_, plan, deadline_);
    last_duration_ = Clock::now() - t0;
    if (outcome.timed_out) {
      stopped_ = true;
      return std::nullopt;
    }
    progress_.update(runs_, planned_, "settings");
    const json& result = outcome.result;
    if (!outcome.error.empty() || !result.contains("calibration") || !result["calibration"].is_object() ||
        result["calibration"].value("throughput", 0.0) <= 0) {
      last_error_ = outcome.error.empty() ? "the calibrate command gave no measurement" : outcome.error;
      progress_.clear();
      spdlog::warn("calibration: {}: {}", settings.describe(), last_error_);
      return std::nullopt;
    }
    CalibrationMeasurement m{settings, result["calibration"]["throughput"].get<double>()};
    measurements_.push_back(m);
    if (unit_.empty()) {
      unit_ = result["calibration"].value("unit", "items");
      benchmark_ = result["calibration"].value("benchmark", "step");
    }
    progress_.clear();
    spdlog::info("calibration: {}: {:.4g} {}/s", settings.describe(), m.throughput, unit_);
    return result;
  }

  // Of the measurements with `same(settings)`, the fastest by the margin rule.
  template <class Filter>
  CalibrationSettings pick(const CalibrationSettings& incumbent, Filter same) const {
    std::vector<CalibrationMeasurement> subset;
    for (const auto& m : measurements_)
      if (same(m.settings)) subset.push_back(m);
    return pick_fastest(subset, incumbent, kCalibrationMargin);
  }

  bool stopped() const { return stopped_; }
  bool measured(const CalibrationSettings& s) const {
    return std::any_of(measurements_.begin(), measurements_.end(), [&](const auto& m) { return m.settings == s; });
  }
  const std::vector<CalibrationMeasurement>& measurements() const { return measurements_; }
  const std::string& last_error() const { return last_error_; }
  const std::string& unit() const { return unit_; }
  const std::string& benchmark() const { return benchmark_; }
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

 private:
  const CalibratorInputs& in_;
  Clock::time_point start_, deadline_;
  double step_seconds_;
  int planned_;
  ProgressDisplay progress_;
  int runs_ = 0;
  bool stopped_ = false;
  std::optional<Clock::duration> last_duration_;
  std::vector<CalibrationMeasurement> measurements_;
  std::string last_error_, unit_, benchmark_;
};

}  // namespace

CalibrationKey calibration_key(const PluginManifest& algorithm, const Device& device) {
  CalibrationKey k;
  k.algorithm = algorithm.name;
  k.algorithm_version = algorithm.version;
  k.torch_version = algorithm.torch_version.value_or("");
  k.device = device.id();
  k.device_name = device.name;
  k.cores = std::max(0, device.compute_units);
  k.memory_gib = device.memory_total_bytes > 0 ? (device.memory_total_bytes + (1LL << 29)) >> 30 : 0;
  k.host_version = MLHOST_VERSION;
  return k;
}

std::optional<CalibrationResult> run_calibration(const CalibratorInputs& in, const CalibrationKey& key,
                                                 std::string& why) {
  const CalibrationSettings base{in.plan["allocator"]["name"].get<std::string>(),
                                 in.plan["threads"]["intra_op"].get<int>(), in.plan["precision"].get<std::string>()};
  // The plan's own allocator first (what every candidate must beat; a calibration cut short
  // by its bound still holds it), then glibc's defaults (the reference the figures are
  // compared with), then the others installed here.
  std::vector<std::string> allocators{base.allocator};
  if (in.vary_allocator)
    for (const std::string& a : allocator_names())  // glibc first
      if (a != base.allocator && allocator_object(a, in.allocator_search_path)) allocators.push_back(a);
  const int cores = in.device->compute_units > 0 ? in.device->compute_units : static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  std::vector<int> threads;
  if (in.vary_threads)
    for (int t : thread_candidates(cores))
      if (t != base.threads) threads.push_back(t);
  const int planned = static_cast<int>(allocators.size() + threads.size()) + (in.vary_precision ? 1 : 0);

  Calibrator c(in, planned);
  spdlog::info("calibrating {} on {} (at most {:.0f} s; --no-calibrate skips this, --calibrate measures again)",
               in.algorithm->name, in.device->id(), in.bound_seconds);
  CalibrationResult result;
  result.key = key;
  for (const std::string& a : allocators) c.measure({a, base.threads, base.precision}, false);
  if (!c.measured(base)) {
    why = c.stopped() ? "the time bound (" + std::to_string(static_cast<int>(in.bound_seconds)) +
                            " s) ran out before the plan's own setting (" + base.describe() + ") was measured"
                      : c.last_error().empty() ? base.describe() + " could not be measured" : c.last_error();
    return std::nullopt;
  }
  CalibrationSettings best = c.pick(base, [&](const CalibrationSettings& s) {
    return s.threads == base.threads && s.precision == base.precision;
  });
  if (in.vary_allocator) result.varied.push_back("allocator");

  if (in.vary_threads) {
    result.varied.push_back("threads");
    for (int t : threads) c.measure({best.allocator, t, best.precision}, false);
    best = c.pick(best, [&](const CalibrationSettings& s) {
      return s.allocator == best.allocator && s.precision == best.precision;
    });
  }

  if (in.vary_precision && best.precision == "fp32") {
    result.varied.push_back("precision");
    const CalibrationSettings reduced{best.allocator, best.threads, "bf16"};
    if (std::optional<json> reply = c.measure(reduced, true)) {
      if (reply->contains("precision_check") && (*reply)["precision_check"].is_object()) {
        result.precision_check = (*reply)["precision_check"];
        if (result.precision_check.value("passed", false))
          best = c.pick(best, [&](const CalibrationSettings& s) {
            return s.allocator == best.allocator && s.threads == best.threads;
          });
      }
    }
  }

  result.benchmark = c.benchmark();
  result.unit = c.unit();
  result.measurements = c.measurements();
  result.chosen = best;
  result.complete = !c.stopped();
  result.seconds = c.seconds();
  result.measured_at = utc_now();
  spdlog::info("calibration of {} done in {:.0f} s: {}{}", in.algorithm->name, result.seconds, best.describe(),
               result.complete ? "" : " (partial: the time bound stopped it)");
  return result;
}

}  // namespace mlhost
