// The host's actions, one function each; main() picks one from the command line.
#pragma once

#include "cli/cli.hpp"
#include "common/errors.hpp"
#include "plugins/discovery.hpp"
#include "run/tracking/mlflow_sync.hpp"

namespace mlhost {

// Where plugins are looked for and which may load: --plugin-dir, MLH_PLUGIN_PATH, the
// allow-list. Throws HostError (exit 2) naming a bad folder or allow-list.
DiscoveryOptions discovery_options(const CliOptions& options);

int command_probe(const CliOptions& options);
int command_list_plugins(const CliOptions& options);
int command_describe(const CliOptions& options);
int command_run(const CliOptions& options);
int command_sweep(const CliOptions& options);
int command_print_plan(const CliOptions& options);
int command_calibrate(const CliOptions& options);
int command_sync_tracking(const CliOptions& options);

// --track mlflow's server and experiment: --mlflow-experiment, else the environment, else the
// settings file's mlflow_experiment. Throws HostError (exit 2) when MLFLOW_TRACKING_URI is
// missing or not an http(s) URL.
MlflowTracking mlflow_tracking(const CliOptions& options, const std::string& settings_experiment);

}  // namespace mlhost
