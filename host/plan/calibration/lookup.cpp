#include "plan/calibration/lookup.hpp"

#include <cstdio>

#include <spdlog/spdlog.h>

#include "plan/allocator.hpp"
#include "plan/calibration/cache.hpp"
#include "plan/calibration/workload.hpp"
#include "plan/machine_share.hpp"
#include "probe/torch_backend.hpp"

namespace mlhost {

using nlohmann::json;
using Calibrate = MeasurementPolicy::Calibrate;

namespace {

// The allocators installed now that `cached` never measured: it was made before they were
// installed, so its choice of allocator is not known to be the best any more.
std::vector<std::string> allocators_not_measured(const CalibrationResult& cached, const AllocatorSearch& search) {
  std::vector<std::string> out;
  if (!cached.varies("allocator") || !cached.complete) return out;
  for (const std::string& name : allocator_names()) {
    bool measured = false;
    for (const CalibrationMeasurement& m : cached.measurements) measured |= m.settings.allocator == name;
    if (!measured && allocator_object(name, search.path ? search.path->c_str() : nullptr, search.system))
      out.push_back(name);
  }
  return out;
}

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : ", ") + w;
  return out;
}

}  // namespace

PlanCalibration calibration_for_plan(const PlanRequest& request, const json& plan, const json& config,
                                     const CalibrateCommand& calibrate, const std::function<void(int, int)>& progress,
                                     const std::function<void()>& before_measuring) {
  const AlgorithmInfo& algorithm = *request.algorithm;
  const Device& device = request.device;
  const MeasurementPolicy& policy = request.measurement;
  PlanCalibration out;
  if (!algorithm.has_command("calibrate")) {
    out.status = "not calibrated: " + algorithm.name() + " has no calibrate command";
    return out;
  }
  CalibrationKey key = calibration_key(algorithm.manifest, device);
  key.workload = workload_hash(algorithm.config_schema, config);
  // Said before anything is measured: whether this run measures and stores (a busy machine
  // does not store) is not known yet, so the warning promises neither.
  CalibrationCache cache = CalibrationCache::load_or_empty(
      policy.cache_file, "the next calibration that completes on a quiet machine replaces it");
  const bool cpu = !torch_backend(device).accelerator;
  auto user_set = [&](const char* k) { return request.settings && request.settings->get(k, device.kind).has_value(); };
  const bool vary_allocator = !request.overrides.allocator && !user_set("allocator") && !built_with_address_sanitizer();
  if (policy.calibrate != Calibrate::kAlways)
    if (std::optional<CalibrationResult> cached = cache.find(key)) {
      out.status = "cached in " + cache.file().string() + " (measured " + cached->measured_at + ")";
      const std::vector<std::string> untried =
          vary_allocator ? allocators_not_measured(*cached, request.allocators) : std::vector<std::string>();
      if (untried.empty() || policy.calibrate == Calibrate::kCachedOnly) {
        if (!untried.empty()) out.status += "; it never measured " + join(untried) + " (installed since)";
        out.result = std::move(cached);
        return out;
      }
      spdlog::info("the cached calibration never measured {} (installed since): calibrating again", join(untried));
    }
  if (policy.calibrate == Calibrate::kCachedOnly && !(policy.previews_a_run && request.sharing.shared())) {
    out.status = "not calibrated: " + policy.why_cached_only;
    return out;
  }
  if (policy.calibrate != Calibrate::kAlways && request.sharing.shared()) {
    out.status = "not calibrated: the machine is shared (" + request.sharing.describe() +
                 "); figures measured now would not hold ('host --calibrate' when it is quiet)";
    spdlog::info("{}", out.status);
    return out;
  }
  const bool vary_threads = cpu && !request.overrides.threads && !user_set("intra_op_threads");
  const bool vary_precision = cpu && (device.fast_precisions & MLH_PRECISION_BF16) && !request.overrides.precision &&
                              !user_set("precision");
  if (!vary_allocator && !vary_threads && !vary_precision) {
    out.status = "not calibrated: nothing left to choose (the command line or the settings file sets what it would measure)";
    return out;
  }
  CalibrationSearch search;
  search.algorithm = algorithm.name();
  search.device = &device;
  search.plan = plan;
  search.vary_allocator = vary_allocator;
  search.vary_threads = vary_threads;
  search.vary_precision = vary_precision;
  search.allocator_search_path = request.allocators.path;
  search.allocator_search_system = request.allocators.system;
  search.bound_seconds = policy.seconds;
  search.calibrate = calibrate;
  search.progress = progress;
  if (before_measuring) before_measuring();
  const CpuUseMeter others;
  CalibrationSearchResult searched = search_calibration(search, key);
  if (!searched.calibration) {
    out.status = "not calibrated: " + searched.failure;
    spdlog::warn("calibration of {} failed: {}; the plan keeps its defaults", algorithm.name(), searched.failure);
    return out;
  }
  const int seconds = static_cast<int>(searched.calibration->seconds + 0.5);
  if (const double busy = others.others_cpus(); request.sharing.looked && busy >= kBusyOtherCpus) {
    // Figures measured beside other work would be kept for every later run: use them now only.
    char cpus[32];
    std::snprintf(cpus, sizeof cpus, "%.1f", busy);
    out.status = "measured now in " + std::to_string(seconds) + " s on a busy machine (other processes kept " + cpus +
                 " CPUs busy): used for this run, not cached";
    spdlog::warn("calibration of {}: {}", algorithm.name(), out.status);
    out.result = std::move(searched.calibration);
    return out;
  }
  try {
    cache.store(*searched.calibration);
    out.status = "measured now in " + std::to_string(seconds) + " s, cached in " + cache.file().string();
  } catch (const std::exception& e) {
    out.status = "measured now; not cached: " + std::string(e.what());
    spdlog::warn("calibration not cached: {}", e.what());
  }
  out.result = std::move(searched.calibration);
  return out;
}

}  // namespace mlhost
