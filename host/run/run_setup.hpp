// Everything a run decides before it starts: the algorithm and its description, the
// command, the run folder, the device, the plan and the config. --print-plan stops here.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/cli.hpp"
#include "plan/calibration_for_run.hpp"
#include "plugins/discovery.hpp"
#include "probe/device.hpp"
#include "probe/report.hpp"

namespace mlhost {

struct RunSetup {
  Discovery discovery;
  std::optional<PluginManifest> algorithm;
  nlohmann::json description;  // null without an algorithm
  std::string command;
  std::filesystem::path run_dir;
  nlohmann::json config;  // null without an algorithm
  ProbeReport probe;
  Device device;
  nlohmann::json plan;
  std::optional<CalibrationResult> calibration;  // the one the plan used, if any
  nlohmann::json batch_search;                   // --batch-size auto: the finder's result
};

// Throws HostError (exit status 2 for bad input) naming the option, file or value.
// `why_cached_only` says why a kCachedOnly set-up does not measure (shown in the plan);
// `measure_batch` false: --batch-size auto takes a cached batch only (--print-plan).
RunSetup setup_run(const CliOptions& options, Calibration calibration = Calibration::kCachedOnly,
                   const std::string& why_cached_only = "", bool measure_batch = true);

// The loadable algorithm plugin `name`, or a HostError that says why not.
const DiscoveredPlugin& find_algorithm(const Discovery& discovery, const std::string& name);

}  // namespace mlhost
