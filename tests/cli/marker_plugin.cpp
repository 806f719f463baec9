// climarker (and clisleep1..4, the same source under other names): a correct device plugin
// for the CLI tests. Loading the library (its constructor runs at dlopen) appends the loading
// process's pid to the file named by $MLH_CLI_MARKER_FILE, so a test can tell whether, and in
// which process, plugin code ran. With $MLH_CLI_PROBE_SLEEP_MS set, probe sleeps that long.
#include <mlh/plugin.hpp>

#include "simple_device.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace {

__attribute__((constructor)) void record_load() {
  const char* path = std::getenv("MLH_CLI_MARKER_FILE");
  if (!path || !*path) return;
  if (std::FILE* f = std::fopen(path, "a")) {
    std::fprintf(f, "%ld\n", static_cast<long>(::getpid()));
    std::fclose(f);
  }
}

class MarkerDevices : public mlh::DevicePlugin {
 public:
  std::vector<mlh::DeviceInfo> probe() override {
    if (const char* ms = std::getenv("MLH_CLI_PROBE_SLEEP_MS"))
      std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(ms)));
    // Class "other": never outranks the CPU. Kind: "climarker", "clisleep1", ...
    return {mlh::testing::simple_device(MLH_PLUGIN_NAME, "cli marker device", MLH_DEVICE_CLASS_OTHER)};
  }
};

}  // namespace

MLH_DEVICE_PLUGIN(MarkerDevices)
