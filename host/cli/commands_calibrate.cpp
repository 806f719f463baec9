// --calibrate: measure the plan's allocator, threads and precision for one algorithm, or for
// every algorithm that can be calibrated, replacing what the cache held, and show the figures.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "plugins/plugin_calls.hpp"
#include "run/run_setup.hpp"

namespace mlhost {

using nlohmann::json;

namespace {

void print_calibration(const RunSetup& s) {
  const CalibrationResult& r = *s.calibration;
  std::cout << "Calibration of " << s.algorithm->name << " on " << s.device.id() << " (" << s.device.name << "), "
            << r.benchmark << " in " << r.unit << "/s" << (r.complete ? "" : " (partial: the time bound stopped it)")
            << ":\n";
  for (const CalibrationMeasurement& m : r.measurements) {
    char line[128];
    std::snprintf(line, sizeof line, "  %-34s %12.4g%s\n", m.settings.describe().c_str(), m.throughput,
                  m.settings == r.chosen ? "   <- chosen" : "");
    std::cout << line;
  }
  if (r.precision_check.is_object())
    std::cout << "  " << r.precision_check.value("precision", "") << " quality check: loss "
              << r.precision_check.value("reduced_loss", 0.0) << " vs fp32 " << r.precision_check.value("fp32_loss", 0.0)
              << " after " << r.precision_check.value("steps", 0) << " steps, "
              << (r.precision_check.value("passed", false) ? "passed" : "failed") << "\n";
  std::cout << "  " << s.plan["calibration"].value("status", "") << "\n";
}

}  // namespace

int command_calibrate(const CliOptions& options) {
  std::vector<std::string> names;
  if (!options.algorithm.empty()) {
    names.push_back(options.algorithm);
  } else {
    const Discovery discovery = discover_plugins(discovery_options(options));
    for (const PluginManifest& m : usable_algorithms(discovery)) {
      const json commands = describe_algorithm(m).at("commands");
      if (std::find(commands.begin(), commands.end(), "calibrate") != commands.end()) names.push_back(m.name);
    }
    if (names.empty()) throw HostError("no algorithm plugin here has a calibrate command (see 'host --list-plugins')", 2);
  }
  int status = 0;
  for (const std::string& name : names) {
    CliOptions one = options;
    one.algorithm = name;
    const RunSetup s = setup_run(one, Calibration::kAlways);
    if (!s.calibration) {
      const std::string why = s.plan.contains("calibration") ? s.plan["calibration"].value("status", "") : "";
      if (!options.algorithm.empty() && why.find("has no calibrate command") != std::string::npos)
        throw HostError("--calibrate: " + why.substr(why.find(name)), 2);
      std::cerr << "host: " << name << ": " << why << "\n";
      status = 1;
      continue;
    }
    print_calibration(s);
  }
  return status;
}

}  // namespace mlhost
