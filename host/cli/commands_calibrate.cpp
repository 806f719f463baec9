// --calibrate: measure the plan's allocator, threads and precision for one algorithm, or for
// every algorithm that can be calibrated, replacing what the cache held, and show the figures.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/launch_options.hpp"
#include "cli/run_setup.hpp"
#include "common/stop_request.hpp"
#include "plugins/plugin_calls.hpp"

namespace mlhost {

using nlohmann::json;

namespace {

void print_calibration(const RunSetup& s) {
  const CalibrationResult& r = *s.planned.calibration;
  if (s.planned.plan.contains("device_choice"))
    std::cout << "Device choice for " << s.algorithm->name() << ": " << s.planned.plan["device_choice"].value("status", "")
              << "\n";
  std::cout << "Calibration of " << s.algorithm->name() << " on " << s.device.id() << " (" << s.device.name << "), "
            << r.benchmark << " in " << r.unit << "/s" << (r.complete ? "" : " (partial: the time bound stopped it)")
            << ":\n";
  for (const CalibrationMeasurement& m : r.measurements) {
    char line[128];
    std::snprintf(line, sizeof line, "  %-34s %12.4g%s\n", m.settings.describe().c_str(), m.throughput,
                  m.settings == r.chosen ? "   <- chosen" : "");
    std::cout << line;
  }
  if (r.precision_check.is_object()) std::cout << "  " << precision_check_text(r.precision_check) << "\n";
  std::cout << "  " << s.planned.plan["calibration"].value("status", "") << "\n";
}

}  // namespace

int command_calibrate(const CliOptions& options) {
  const Discovery discovery = discover_plugins(discovery_options(options));
  std::vector<std::string> names;
  if (!options.algorithm.empty()) {
    const AlgorithmInfo algorithm = describe_algorithm(discovery.usable_algorithm(options.algorithm).manifest);
    if (!algorithm.has_command("calibrate"))
      throw HostError("--calibrate: " + algorithm.name() + " has no calibrate command", kExitBadInput);
    names.push_back(algorithm.name());
  } else {
    for (const PluginManifest& m : discovery.usable("algorithm"))
      if (describe_algorithm(m).has_command("calibrate")) names.push_back(m.name);
    if (names.empty())
      throw HostError("no algorithm plugin here has a calibrate command (see 'host --list-plugins')", kExitBadInput);
  }
  record_stop_signals();  // a stop ends the calibration without keeping part of it
  const MeasurementPolicy measurement = measurement_policy(options, MeasurementPolicy::Calibrate::kAlways);
  int status = 0;
  for (const std::string& name : names) {
    CliOptions one = options;
    one.algorithm = name;
    const RunSetup s = setup_run(one, Launch{}, measurement);
    if (!s.planned.calibration) {
      std::cerr << "host: " << name << ": " << s.planned.plan["calibration"].value("status", "") << "\n";
      status = 1;
    } else {
      print_calibration(s);
    }
    // Stopped: nothing more is measured, and the exit status says it was stopped.
    if (const int sig = first_stop_signal()) return is_preemption(sig) ? kExitPreempted : kExitCancelled;
  }
  return status;
}

}  // namespace mlhost
