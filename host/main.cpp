// host: finds device and algorithm plugins, probes and ranks the devices, and runs
// algorithms on the best one.
#include <cstring>
#include <iostream>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/commands.hpp"
#include "run/host_log.hpp"
#include "run/worker.hpp"

namespace {

// Logs go to stderr: stdout carries reports and JSON that other programs read.
void setup_logging() {
  spdlog::set_default_logger(spdlog::stderr_color_mt("host"));
  spdlog::set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace mlhost;
  // The host starting one of its own training workers (run/worker.hpp).
  if (argc == 3 && std::strcmp(argv[1], kWorkerSpecFlag) == 0) {
    setup_logging();
    return worker_program(argv[2]);
  }
  CliOptions options;
  try {
    options = parse_cli(argc, argv);
  } catch (const CliError& e) {
    std::cerr << "host: error: " << e.what() << "\nTry 'host --help'.\n";
    return 2;
  }
  setup_logging();
  host_log::install();  // a run's log.txt gets the host's lines too (run_workers.cpp attaches it)
  spdlog::set_level(spdlog::level::from_str(options.log_level));

  try {
    switch (options.action) {
      case CliOptions::Action::kHelp: std::cout << options.help; return 0;
      case CliOptions::Action::kVersion: std::cout << "mlhost " << MLHOST_VERSION << " (plugin ABI "
                                                   << MLH_ABI_VERSION_MAJOR << "." << MLH_ABI_VERSION_MINOR << ")\n";
        return 0;
      case CliOptions::Action::kProbe: return command_probe(options);
      case CliOptions::Action::kListPlugins: return command_list_plugins(options);
      case CliOptions::Action::kDescribe: return command_describe(options);
      case CliOptions::Action::kRun: return command_run(options);
      case CliOptions::Action::kSweep: return command_sweep(options);
      case CliOptions::Action::kPrintPlan: return command_print_plan(options);
      case CliOptions::Action::kCalibrate: return command_calibrate(options);
      case CliOptions::Action::kSyncTracking: return command_sync_tracking(options);
    }
  } catch (const HostError& e) {
    std::cerr << "host: error: " << e.what() << "\n";
    host_log::write_line("error", e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    std::cerr << "host: error: " << e.what() << "\n";
    host_log::write_line("error", e.what());
    return 1;
  }
  return 0;
}
