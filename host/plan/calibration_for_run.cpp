#include "plan/calibration_for_run.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "cli/commands.hpp"
#include "plan/allocator.hpp"
#include "plan/calibration_cache.hpp"
#include "plan/calibrator.hpp"

namespace mlhost {

using nlohmann::json;

namespace {

bool has_command(const json& description, const std::string& command) {
  const json& commands = description.at("commands");
  return std::find(commands.begin(), commands.end(), command) != commands.end();
}

}  // namespace

std::optional<CalibrationResult> calibration_for_run(const RunCalibrationInputs& s, Calibration mode,
                                                     const std::string& why_cached_only, std::string& status) {
  const CliOptions& options = s.options;
  const PlanInputs& inputs = s.plan_inputs;
  if (!has_command(s.description, "calibrate")) {
    status = "not calibrated: " + s.algorithm.name + " has no calibrate command";
    return std::nullopt;
  }
  const CalibrationKey key = calibration_key(s.algorithm, s.device);
  CalibrationCache cache(calibration_cache_file());
  try {
    cache.load();
  } catch (const CalibrationError& e) {
    if (mode != Calibration::kAlways)
      throw HostError(std::string(e.what()) + " (not used; delete the file, or run 'host --calibrate' to replace it)", 2);
    spdlog::warn("{}: not used, and replaced by this calibration", e.what());
    cache = CalibrationCache(cache.file());
  }
  if (mode != Calibration::kAlways)
    if (std::optional<CalibrationResult> cached = cache.find(key)) {
      status = "cached in " + cache.file().string() + " (measured " + cached->measured_at + ")";
      return cached;
    }
  if (mode == Calibration::kCachedOnly) {
    status = "not calibrated: " + why_cached_only;
    return std::nullopt;
  }
  const DiscoveredPlugin* device_plugin = s.discovery.find_usable("device", s.device.plugin);
  if (!device_plugin) throw HostError("device plugin '" + s.device.plugin + "' vanished after probing");
  const bool cpu = s.device.device_class == MLH_DEVICE_CLASS_CPU;
  const HardwareSettings* settings = inputs.settings;
  auto user_set = [&](const char* key) { return settings && settings->get(key, s.device.kind).has_value(); };
  CalibratorInputs in;
  in.algorithm = &s.algorithm;
  in.device_plugin = &device_plugin->manifest;
  in.device = &s.device;
  in.plan = s.plan;
  in.config = s.config;
  in.vary_allocator = !(options.allocator && *options.allocator != "auto") && !user_set("allocator") &&
                      !built_with_address_sanitizer();
  in.vary_threads = cpu && !user_set("intra_op_threads");
  in.vary_precision = cpu && (s.device.fast_precisions & MLH_PRECISION_BF16) &&
                      !(options.precision && *options.precision != "auto") && !user_set("precision");
  in.allocator_search_path = inputs.allocator_search_path;
  in.bound_seconds = options.calibration_seconds;
  std::string why;
  std::optional<CalibrationResult> result = run_calibration(in, key, why);
  if (!result) {
    status = "not calibrated: " + why;
    spdlog::warn("calibration of {} failed: {}; the plan keeps its defaults", s.algorithm.name, why);
    return std::nullopt;
  }
  try {
    cache.store(*result);
    status = "measured now in " + std::to_string(static_cast<int>(result->seconds + 0.5)) + " s, cached in " +
             cache.file().string();
  } catch (const std::exception& e) {
    status = "measured now; not cached: " + std::string(e.what());
    spdlog::warn("calibration not cached: {}", e.what());
  }
  return result;
}

}  // namespace mlhost
