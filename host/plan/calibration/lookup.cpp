#include "plan/calibration/lookup.hpp"

#include <spdlog/spdlog.h>

#include "plan/allocator.hpp"
#include "plan/calibration/cache.hpp"

namespace mlhost {

using nlohmann::json;
using Calibrate = MeasurementPolicy::Calibrate;

PlanCalibration calibration_for_plan(const PlanRequest& request, const json& plan, const CalibrateCommand& calibrate,
                                     const std::function<void(int, int)>& progress) {
  const AlgorithmInfo& algorithm = *request.algorithm;
  const Device& device = request.device;
  const MeasurementPolicy& policy = request.measurement;
  PlanCalibration out;
  if (!algorithm.has_command("calibrate")) {
    out.status = "not calibrated: " + algorithm.name() + " has no calibrate command";
    return out;
  }
  const CalibrationKey key = calibration_key(algorithm.manifest, device);
  CalibrationCache cache(policy.cache_file);
  try {
    cache.load();
  } catch (const CalibrationError& e) {
    // Derived data: a damaged file is never a reason to stop a run. Nothing of it is used, and
    // the next calibration stored replaces it.
    spdlog::warn("{}: not used; {}", e.what(),
                 policy.calibrate == Calibrate::kCachedOnly ? "the next run that calibrates replaces it"
                                                            : "measured again, and replaced");
    cache = CalibrationCache(cache.file());
  }
  if (policy.calibrate != Calibrate::kAlways)
    if (std::optional<CalibrationResult> cached = cache.find(key)) {
      out.status = "cached in " + cache.file().string() + " (measured " + cached->measured_at + ")";
      out.result = std::move(cached);
      return out;
    }
  if (policy.calibrate == Calibrate::kCachedOnly) {
    out.status = "not calibrated: " + policy.why_cached_only;
    return out;
  }
  const bool cpu = device.device_class == MLH_DEVICE_CLASS_CPU;
  auto user_set = [&](const char* k) { return request.settings && request.settings->get(k, device.kind).has_value(); };
  CalibrationSearch search;
  search.algorithm = algorithm.name();
  search.device = &device;
  search.plan = plan;
  search.vary_allocator = !request.overrides.allocator && !user_set("allocator") && !built_with_address_sanitizer();
  search.vary_threads = cpu && !user_set("intra_op_threads");
  search.vary_precision = cpu && (device.fast_precisions & MLH_PRECISION_BF16) && !request.overrides.precision &&
                          !user_set("precision");
  search.allocator_search_path = request.allocators.path;
  search.allocator_search_system = request.allocators.system;
  search.bound_seconds = policy.seconds;
  search.calibrate = calibrate;
  search.progress = progress;
  CalibrationSearchResult searched = search_calibration(search, key);
  if (!searched.calibration) {
    out.status = "not calibrated: " + searched.failure;
    spdlog::warn("calibration of {} failed: {}; the plan keeps its defaults", algorithm.name(), searched.failure);
    return out;
  }
  try {
    cache.store(*searched.calibration);
    out.status = "measured now in " + std::to_string(static_cast<int>(searched.calibration->seconds + 0.5)) +
                 " s, cached in " + cache.file().string();
  } catch (const std::exception& e) {
    out.status = "measured now; not cached: " + std::string(e.what());
    spdlog::warn("calibration not cached: {}", e.what());
  }
  out.result = std::move(searched.calibration);
  return out;
}

}  // namespace mlhost
