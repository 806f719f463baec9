// The host's options as Boost declares them, and the --help text made from them. Split from
// cli.cpp so the option table (mostly help text) reads apart from the checks on the values.
#pragma once

#include <string>

#include <boost/program_options.hpp>

#include "cli/cli.hpp"

namespace mlhost {

namespace po = boost::program_options;

// Values the command line gives as text that parse_cli checks and converts itself, with
// messages naming the option and its allowed values (Boost's would not), before they reach
// CliOptions.
struct CliRawValues {
  std::string device = "auto";
  std::string resume_mode;     // "yes" (bare --resume) or what followed --resume=
  std::string preempt_signal;  // a signal name or number
  std::string sweep_parallel;  // auto or N
  std::string precision, allocator, batch_size, max_steps, threads;
};

// Every option, grouped into --help's sections. Parsing writes the values into o and raw, so
// both must outlive the variables map it fills.
po::options_description declare_cli_options(CliOptions& o, CliRawValues& raw);

// --help: the usage lines, then every section.
std::string cli_help_text(const po::options_description& all);

}  // namespace mlhost
