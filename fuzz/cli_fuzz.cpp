// The host's command line: each input line is one argument to parse_cli.
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args{"host"};
  std::istringstream lines(std::string(reinterpret_cast<const char*>(data), size));
  for (std::string line; std::getline(lines, line) && args.size() < 64;) args.push_back(line);
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  argv.push_back(nullptr);
  try {
    (void)mlhost::parse_cli(static_cast<int>(args.size()), argv.data());
  } catch (const mlhost::CliError&) {
  }
  return 0;
}
