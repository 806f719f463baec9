// Device choice by measurement (docs/devices.md, "Device choice"), a step of plan_run(): when
// a run could go on more than one device, the algorithm's own calibrate command times the
// training step of this run's config on each candidate, in a worker of that device, for about
// a second, and the fastest is chosen. The class rule (probe/ranking.hpp) is where it starts
// and what it falls back to: a device becomes first only when measured at least
// kCalibrationMargin faster than the one the class rule put first, so noise never moves a run.
//
// The figures are cached per machine, device, algorithm, versions, config and the worker's
// settings (cache.hpp, "device_speeds"). Nothing is measured where the user named the device (--device), where the
// run is distributed (one rank per accelerator), where the algorithm has no calibrate command,
// or where the policy only reads the cache (--no-calibrate, --print-plan): then the cached
// figures choose when every candidate has one, else the class rule does, and the ranking says
// why. A device whose measurement fails is ranked after the measured ones with the failure as
// its reason.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/plan_types.hpp"

namespace mlhost {

// One candidate's measurement, as the planner prepares it: the plan and config the device
// would run with and the worker that times the step; the hash of the config and the worker's
// settings keys the cache.
struct DeviceTrial {
  std::string config_hash;
  std::function<CalibrateOutcome(std::chrono::steady_clock::time_point deadline)> measure;
};
// Throws (PlanError, HostError) when no plan or worker can be made for the device: that is
// the device's failure.
using PrepareDeviceTrial = std::function<DeviceTrial(const Device&)>;

// What was known of one candidate's speed.
struct DeviceSpeed {
  std::string device;
  double throughput = 0;  // > 0 when measured
  std::string unit, benchmark;
  std::string failure;      // why there is no figure
  std::string measured_at;  // set when the figure came from the cache
  nlohmann::json to_json() const;
};

struct DeviceChoice {
  Ranking ranking;  // the request's ranking, its candidates reordered by speed when measured
  // One line for the plan and the log: "measured now: ...", "cached in FILE", "by device
  // class: <why not measured>"; empty when there was no choice (one candidate, --device).
  std::string status;
  std::vector<DeviceSpeed> speeds;  // one per candidate, in the new order; empty: by class
  nlohmann::json to_json() const;   // the plan's "device_choice"
};

// Seconds each candidate's step is timed for (after the worker starts and warms up), and the
// most one measurement may take before its worker is killed.
constexpr double kDeviceTimingSeconds = 1.0;
constexpr int kDeviceMeasurementBoundSeconds = 30;

DeviceChoice choose_device_by_speed(const PlanRequest& request, const PrepareDeviceTrial& prepare);

// "71,000" or "8.84": a throughput with three significant digits and thousands separators.
std::string speed_text(double throughput);

}  // namespace mlhost
