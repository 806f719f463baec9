#include "plan/device_choice.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <spdlog/spdlog.h>

#include "common/stop_request.hpp"
#include "plan/calibration/cache.hpp"
#include "plan/calibration/search.hpp"
#include "plan/machine_share.hpp"
#include "plan/plan_text.hpp"

namespace mlhost {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using Calibrate = MeasurementPolicy::Calibrate;

namespace {

// "env_steps" -> "env steps"
std::string unit_words(std::string unit) {
  std::replace(unit.begin(), unit.end(), '_', ' ');
  return unit;
}

std::string figure(const DeviceSpeed& s) { return speed_text(s.throughput); }

// The class rule's ranking kept, saying why nothing was measured.
DeviceChoice by_class(DeviceChoice out, const std::string& why) {
  out.status = "by device class: " + why;
  out.speeds.clear();
  RankedDevice& first = out.ranking.devices[*out.ranking.chosen];
  first.reason += "; not measured: " + why;
  return out;
}

// The candidates (position > 0) reordered as `order` (device ids) says, with the reasons the
// figures give; the excluded devices follow as before.
Ranking reordered(const Ranking& ranking, const std::vector<DeviceSpeed>& order, bool by_class) {
  std::vector<RankedDevice> candidates, excluded;
  for (const RankedDevice& r : ranking.devices) (r.position > 0 ? candidates : excluded).push_back(r);
  Ranking out = ranking;
  out.devices.clear();
  const DeviceSpeed& best = order.front();
  const std::string per_second = " " + unit_words(best.unit) + "/s";
  for (const DeviceSpeed& s : order) {
    auto it = std::find_if(candidates.begin(), candidates.end(), [&](const RankedDevice& r) { return r.device.id() == s.device; });
    RankedDevice r = *it;
    r.position = static_cast<int>(out.devices.size() + 1);
    r.chosen = r.position == 1;
    if (r.chosen) {
      std::string others;
      for (const DeviceSpeed& o : order)
        if (&o != &s && o.throughput > 0) others += (others.empty() ? "" : ", ") + o.device + " " + figure(o);
      r.reason = (by_class ? "first by device class; the figures are within " +
                                 std::to_string(static_cast<int>(kCalibrationMargin * 100)) + "% of each other: "
                           : "fastest measured: ") +
                 figure(s) + per_second + (others.empty() ? "" : " vs " + others);
    } else if (s.throughput > 0) {
      r.reason = "slower: " + figure(s) + per_second + " measured vs the chosen " + best.device + "'s " + figure(best);
    } else {
      r.reason = "not measured: " + s.failure;
    }
    out.devices.push_back(std::move(r));
  }
  out.devices.insert(out.devices.end(), excluded.begin(), excluded.end());
  out.chosen = 0;
  return out;
}

}  // namespace

std::string speed_text(double throughput) {
  if (throughput >= 1000) {
    // Three significant digits, then thousands separators: 71,000 and 8,700.
    const double scale = std::pow(10.0, std::floor(std::log10(throughput)) - 2);
    return with_thousands(static_cast<int64_t>(std::llround(throughput / scale) * scale));
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, throughput >= 100 ? "%.0f" : throughput >= 10 ? "%.1f" : "%.2f", throughput);
  return buf;
}

json DeviceSpeed::to_json() const {
  json j = {{"device", device}};
  if (throughput > 0) {
    j["throughput"] = throughput;
    j["unit"] = unit;
    j["benchmark"] = benchmark;
    j["measured"] = measured_at.empty() ? "now" : measured_at;
  } else {
    j["failure"] = failure;
  }
  return j;
}

json DeviceChoice::to_json() const {
  json devices = json::array();
  for (const DeviceSpeed& s : speeds) devices.push_back(s.to_json());
  return {{"status", status}, {"rule", speeds.empty() ? "device class" : "measured"}, {"devices", devices}};
}

DeviceChoice choose_device_by_speed(const PlanRequest& request, const PrepareDeviceTrial& prepare) {
  DeviceChoice out;
  out.ranking = request.ranking;
  std::vector<const RankedDevice*> candidates;
  for (const RankedDevice& r : out.ranking.devices)
    if (r.position > 0) candidates.push_back(&r);
  // No choice to make: one candidate, or the one the user named.
  if (candidates.size() < 2 || out.ranking.requested || !out.ranking.chosen || !request.algorithm) return out;
  const AlgorithmInfo& algorithm = *request.algorithm;
  if (request.launch.distributed()) return by_class(out, "a distributed run takes its devices by class");
  if (!algorithm.has_command("calibrate"))
    return by_class(out, algorithm.name() + " has no calibrate command to time its training step with");

  const MeasurementPolicy& policy = request.measurement;
  CalibrationCache cache = CalibrationCache::load_or_empty(policy.cache_file, "the devices are measured again");
  const bool may_measure = policy.calibrate != Calibrate::kCachedOnly;
  bool announced = false;
  const CpuUseMeter others;
  std::vector<DeviceSpeed> speeds;
  std::vector<CalibrationCache::DeviceSpeed> measured_now;
  bool all_cached = true;
  for (const RankedDevice* c : candidates) {
    DeviceSpeed s;
    s.device = c->device.id();
    if (first_stop_signal() != 0) return by_class(out, signal_name(first_stop_signal()) + " stopped the measurement");
    DeviceTrial trial;
    try {
      trial = prepare(c->device);
    } catch (const std::exception& e) {
      s.failure = std::string("no plan can be made for it: ") + e.what();
      speeds.push_back(s);
      continue;
    }
    const CalibrationKey key = calibration_key(algorithm.manifest, c->device);
    if (policy.calibrate != Calibrate::kAlways)
      if (const auto cached = cache.find_device_speed(key, trial.config_hash)) {
        s.throughput = cached->result["throughput"].get<double>();
        s.unit = cached->result["unit"].get<std::string>();
        s.benchmark = cached->result["benchmark"].get<std::string>();
        s.measured_at = cached->measured_at;
        speeds.push_back(s);
        continue;
      }
    all_cached = false;
    if (!may_measure) break;
    if (!announced)
      spdlog::info("timing {}'s training step on each of {} devices to choose the fastest (a few seconds each; "
                   "--device NAME picks one, --no-calibrate ranks by class)",
                   algorithm.name(), candidates.size());
    announced = true;
    const CalibrateOutcome outcome = trial.measure(Clock::now() + std::chrono::seconds(kDeviceMeasurementBoundSeconds));
    if (first_stop_signal() != 0) return by_class(out, signal_name(first_stop_signal()) + " stopped the measurement");
    const json timing = outcome.result.is_object() ? outcome.result.value("calibration", json()) : json();
    if (outcome.timed_out)
      s.failure = "its measurement did not end within " + std::to_string(kDeviceMeasurementBoundSeconds) + " s";
    else if (!outcome.error.empty())
      s.failure = outcome.error;
    else if (!timing.is_object() || !(timing.value("throughput", 0.0) > 0))
      s.failure = "the calibrate command gave no measurement";
    if (!s.failure.empty()) {
      spdlog::warn("{} on {} could not be measured: {}", algorithm.name(), s.device, s.failure);
      speeds.push_back(s);
      continue;
    }
    s.throughput = timing["throughput"].get<double>();
    s.unit = timing.value("unit", "items");
    s.benchmark = timing.value("benchmark", "step");
    spdlog::info("{} on {}: {} {}/s", algorithm.name(), s.device, speed_text(s.throughput), unit_words(s.unit));
    measured_now.push_back({key, trial.config_hash, {{"throughput", s.throughput}, {"unit", s.unit}, {"benchmark", s.benchmark}},
                            utc_now()});
    speeds.push_back(s);
  }
  if (!may_measure && !all_cached)
    return by_class(out, "no figures cached for every device with this config, and " + policy.why_cached_only);

  std::vector<DeviceSpeed> order;
  for (const DeviceSpeed& s : speeds)
    if (s.throughput > 0) order.push_back(s);
  if (order.empty()) {
    std::string failures;
    for (const DeviceSpeed& s : speeds) failures += (failures.empty() ? "" : "; ") + s.device + ": " + s.failure;
    return by_class(out, "no device could be measured (" + failures + ")");
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const DeviceSpeed& a, const DeviceSpeed& b) { return a.throughput > b.throughput; });
  // The class rule's first keeps its place unless another is faster beyond the margin.
  const std::string first_by_class = candidates.front()->device.id();
  bool kept_by_margin = false;
  if (order.front().device != first_by_class) {
    auto first = std::find_if(order.begin(), order.end(), [&](const DeviceSpeed& s) { return s.device == first_by_class; });
    if (first != order.end() && order.front().throughput < first->throughput * (1 + kCalibrationMargin)) {
      std::rotate(order.begin(), first, first + 1);
      kept_by_margin = true;
    }
  }
  // The measurement decides only beyond the margin: where the class rule's first is also the
  // fastest, by less than it, the class rule chose, and the plan says so.
  const bool by_class = kept_by_margin || (order.front().device == first_by_class && order.size() > 1 &&
                                           order[1].throughput > 0 &&
                                           order.front().throughput < order[1].throughput * (1 + kCalibrationMargin));
  for (const DeviceSpeed& s : speeds)
    if (s.throughput <= 0) order.push_back(s);

  const bool busy = request.sharing.looked && others.others_cpus() >= kBusyOtherCpus;
  std::string kept;
  if (measured_now.empty()) {
    kept = "cached in " + cache.file().string();
  } else if (busy) {
    kept = "measured now on a busy machine: used for this run, not cached";
  } else {
    kept = "measured now";
    try {
      for (const auto& entry : measured_now) cache.store_device_speed(entry);
      kept += ", cached in " + cache.file().string();
    } catch (const std::exception& e) {
      kept += "; not cached: " + std::string(e.what());
    }
  }
  out.ranking = reordered(out.ranking, order, by_class);
  out.speeds = order;
  std::string figures, failed;
  for (const DeviceSpeed& s : order)
    if (s.throughput > 0)
      figures += (figures.empty() ? "" : ", ") + s.device + " " + figure(s);
    else
      failed += (failed.empty() ? "; " : ", ") + s.device;
  out.status = order.front().device +
               (by_class ? " by device class, the measured speeds within " +
                               std::to_string(static_cast<int>(kCalibrationMargin * 100)) + "% of each other ("
                         : " by measured speed (") +
               figures + " " + unit_words(order.front().unit) + "/s" +
               (failed.empty() ? "" : failed + " failed") + "; " + kept + ")";
  return out;
}

}  // namespace mlhost
