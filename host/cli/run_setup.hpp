// Everything a command gathers before it runs: the plugins found, the algorithm and what the
// user set of its config (a resumed run's, --config, --set), the devices probed and ranked,
// the hardware settings file and the device rules, and the plan made from all of them
// (plan/planner.hpp). --print-plan stops here.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "cli/cli.hpp"
#include "plan/planner.hpp"
#include "plan/run_registry.hpp"
#include "plugins/algorithm_info.hpp"
#include "plugins/discovery.hpp"
#include "probe/report.hpp"

namespace mlhost {

struct RunSetup {
  Discovery discovery;
  std::optional<AlgorithmInfo> algorithm;  // none without --algorithm
  std::filesystem::path run_dir;
  bool resume = false;  // --resume, or --resume auto on a folder that holds a run
  // A command other than training on a trained run (--resume --command eval): it runs in a
  // folder of its own inside run_dir (run/run_files.hpp, make_command_dir).
  bool on_trained_run = false;
  ProbeReport probe;
  Device device;  // the chosen one
  PlanRequest request;  // what the plan was made from (replan_if_joined makes it again)
  PlannedRun planned;
  // This run's entry in the machine's run registry (plan/run_registry.hpp): a run that plans
  // threads on a machine it may share; none for --print-plan, a distributed launch, or with
  // MLH_MACHINE_SHARING=dedicated.
  std::shared_ptr<RunRegistry> registry;
  std::vector<pid_t> planned_beside;  // the registered runs the plan saw
  std::optional<HardwareSettings> settings;  // the settings file read, if any (its tracking keys)
  // --resume of a run that completed, asking for nothing more: what to tell the user. Set,
  // nothing else is (no probe, no plan): the run is left exactly as it is.
  std::optional<std::string> complete;
};

// Throws HostError (exit status 2 for bad input) naming the option, file or value.
// `registers`: a run, entered in the machine's run registry (see RunSetup::registry).
RunSetup setup_run(const CliOptions& options, const Launch& launch, const MeasurementPolicy& measurement,
                   bool registers = false);

// The device the ranking chose. None: HostError, exit 2 where --device asked for one this
// machine cannot give (the user's to change, said with the way out), 1 where none is usable.
const Device& chosen_device_or_refuse(const Ranking& ranking);

// Before the workers start: runs that entered the registry after this one looked (started
// within the same moment) make the plan again with them counted, so that runs started
// together split the cores; then the registry records this run's threads.
void replan_if_joined(RunSetup& s, const Launch& launch);

// The calibration cache and the time bound the command line gives measurements.
MeasurementPolicy measurement_policy(const CliOptions& options, MeasurementPolicy::Calibrate calibrate,
                                     const std::string& why_cached_only = "");

}  // namespace mlhost
