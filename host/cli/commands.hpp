// The host's actions, one function each; main() picks one from the command line.
#pragma once

#include "cli/cli.hpp"
#include "plugins/discovery.hpp"
#include "probe/report.hpp"

namespace mlhost {

// A failure to report to the user; main() prints it and exits with `exit_code`.
class HostError : public std::runtime_error {
 public:
  explicit HostError(const std::string& message, int exit_code = 1)
      : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

DiscoveryOptions discovery_options(const CliOptions& options);

// Probing and ranking of the devices `discovery` found: what --probe shows and a run
// starts from. GPUs that none of `algorithms` can drive are unavailable (backends.hpp).
ProbeReport run_probe(const CliOptions& options, const Discovery& discovery,
                      const std::vector<PluginManifest>& algorithms);

// The usable algorithm plugins' manifests.
std::vector<PluginManifest> usable_algorithms(const Discovery& discovery);

int command_probe(const CliOptions& options);
int command_list_plugins(const CliOptions& options);
int command_describe(const CliOptions& options);
int command_run(const CliOptions& options);
int command_print_plan(const CliOptions& options);
int command_calibrate(const CliOptions& options);

}  // namespace mlhost
