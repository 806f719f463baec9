#include "plan/calibration/batch_search.hpp"

#include <algorithm>
#include <chrono>

#include <spdlog/spdlog.h>

#include "plan/calibration/cache.hpp"
#include "plugins/sha256.hpp"

namespace mlhost {

using nlohmann::json;

BatchSearch batch_size_for_plan(const PlanRequest& request, const json& plan, const json& config,
                                const CalibrateCommand& calibrate) {
  const AlgorithmInfo& algorithm = *request.algorithm;
  const Device& device = request.device;
  if (!algorithm.has_batch_size())
    throw PlanError("--batch-size auto: " + algorithm.name() +
                    " has no batch_size in its config: its batch is not a batch size the host can change "
                    "(see 'host --describe " + algorithm.name() + "')");
  if (!algorithm.has_command("calibrate"))
    throw PlanError("--batch-size auto: " + algorithm.name() + " has no calibrate command to search with");

  // Cached per machine, algorithm and config (its batch size aside: that is what is sought).
  json keyed_config = config;
  keyed_config.erase("batch_size");
  const CalibrationKey key = calibration_key(algorithm.manifest, device);
  const std::string config_hash = sha256_hex(keyed_config.dump());
  CalibrationCache cache =
      CalibrationCache::load_or_empty(request.measurement.cache_file, "the batch is sought again, and the file replaced");
  BatchSearch out;
  if (auto cached = cache.find_batch_size(key, config_hash)) {
    out.status = "cached in " + cache.file().string() + " (measured " + cached->measured_at + ")";
    out.result = cached->result;
    return out;
  }
  if (!request.measurement.may_search_batch) {
    out.status = "not found yet: a run finds it";
    return out;
  }

  json search_plan = plan;
  const double seconds = request.measurement.seconds;
  const json& planned = plan["batch_size"];
  const int64_t start = planned.is_number_integer() ? std::max<int64_t>(1, planned.get<int64_t>() / 8) : 1;
  search_plan["calibration"] = {{"batch_search", {{"start", start}, {"seconds", seconds}}}};
  spdlog::info("finding the batch size of {} on {}: real training steps at growing batches from {} (at most {:.0f} s)",
               algorithm.name(), device.id(), start, seconds);
  // The worker bounds its search; the host's deadline only catches a search that hangs.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(static_cast<int64_t>(seconds) + 60);
  const CalibrateOutcome outcome = calibrate(search_plan, deadline);
  const json result = outcome.result.is_object() ? outcome.result.value("batch_search", json()) : json();
  if (outcome.timed_out || !outcome.error.empty() || !result.is_object() || !result.value("batch", json()).is_number_integer())
    throw HostError("--batch-size auto: the batch search of " + algorithm.name() + " failed: " +
                    (outcome.timed_out ? "it did not end in time"
                     : !outcome.error.empty() ? outcome.error
                                              : "it gave no batch_search result"));
  if (result["batch"].get<int64_t>() < 1)
    throw PlanError("--batch-size auto: " + algorithm.name() + ": " + result.value("reason", std::string("nothing fits")) +
                    " on " + device.id() + " under the plan's memory limit");
  try {
    cache.store_batch_size({key, config_hash, result, utc_now()});
    out.status = "measured now, cached in " + cache.file().string();
  } catch (const std::exception& e) {
    out.status = "measured now; not cached: " + std::string(e.what());
  }
  spdlog::info("batch size {}: {}", result["batch"].get<int64_t>(), result.value("reason", ""));
  out.result = result;
  return out;
}

}  // namespace mlhost
