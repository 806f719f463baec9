#include "plan/batch_size_for_run.hpp"

#include <algorithm>
#include <chrono>

#include <spdlog/spdlog.h>

#include "cli/commands.hpp"
#include "plan/calibration_cache.hpp"
#include "plan/calibrator.hpp"
#include "plugins/sha256.hpp"

namespace mlhost {

using nlohmann::json;

json batch_size_for_run(const RunCalibrationInputs& s, bool may_measure, std::string& status) {
  const json& schema = s.description.at("config_schema");
  const bool has_batch = schema.contains("properties") && schema["properties"].contains("batch_size");
  const json& commands = s.description.at("commands");
  if (!has_batch)
    throw HostError("--batch-size auto: " + s.algorithm.name +
                        " has no batch_size in its config: its batch is not a batch size the host can change "
                        "(see 'host --describe " + s.algorithm.name + "')",
                    2);
  if (std::find(commands.begin(), commands.end(), "calibrate") == commands.end())
    throw HostError("--batch-size auto: " + s.algorithm.name + " has no calibrate command to search with", 2);

  // Cached per machine, algorithm and config (its batch size aside: that is what is sought).
  json config = s.config;
  config.erase("batch_size");
  const CalibrationKey key = calibration_key(s.algorithm, s.device);
  const std::string config_hash = sha256_hex(config.dump());
  CalibrationCache cache(calibration_cache_file());
  try {
    cache.load();
  } catch (const CalibrationError& e) {
    throw HostError(std::string(e.what()) + " (not used; delete the file, or run 'host --calibrate' to replace it)", 2);
  }
  if (auto cached = cache.find_batch_size(key, config_hash)) {
    status = "cached in " + cache.file().string() + " (measured " + cached->measured_at + ")";
    return cached->result;
  }
  if (!may_measure) {
    status = "not found yet: a run finds it";
    return json();
  }

  const DiscoveredPlugin* device_plugin = s.discovery.find_usable("device", s.device.plugin);
  if (!device_plugin) throw HostError("device plugin '" + s.device.plugin + "' vanished after probing");
  CalibratorInputs in;
  in.algorithm = &s.algorithm;
  in.device_plugin = &device_plugin->manifest;
  in.device = &s.device;
  in.config = s.config;
  json plan = s.plan;
  const double seconds = s.options.calibration_seconds;
  const int64_t start = s.plan["batch_size"].is_number_integer() ? std::max<int64_t>(1, s.plan["batch_size"].get<int64_t>() / 8) : 1;
  plan["calibration"] = {{"batch_search", {{"start", start}, {"seconds", seconds}}}};
  spdlog::info("finding the batch size of {} on {}: real training steps at growing batches from {} (at most {:.0f} s)",
               s.algorithm.name, s.device.id(), start, seconds);
  // The worker bounds its search; the host's deadline only catches a search that hangs.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(static_cast<int64_t>(seconds) + 60);
  const CalibrateOutcome outcome = run_calibrate_command(in, plan, deadline);
  const json result = outcome.result.is_object() ? outcome.result.value("batch_search", json()) : json();
  if (outcome.timed_out || !outcome.error.empty() || !result.is_object() || !result.value("batch", json()).is_number_integer())
    throw HostError("--batch-size auto: the batch search of " + s.algorithm.name + " failed: " +
                        (outcome.timed_out ? "it did not end in time"
                                           : !outcome.error.empty() ? outcome.error : "it gave no batch_search result"),
                    1);
  if (result["batch"].get<int64_t>() < 1)
    throw HostError("--batch-size auto: " + s.algorithm.name + ": " + result.value("reason", std::string("nothing fits")) +
                        " on " + s.device.id() + " under the plan's memory limit",
                    2);
  try {
    cache.store_batch_size({key, config_hash, result, utc_now()});
    status = "measured now, cached in " + cache.file().string();
  } catch (const std::exception& e) {
    status = "measured now; not cached: " + std::string(e.what());
  }
  spdlog::info("batch size {}: {}", result["batch"].get<int64_t>(), result.value("reason", ""));
  return result;
}

}  // namespace mlhost
