// Device telemetry during a run: a child process of the host loads the chosen device's
// plugin and samples the worker at an interval into <run>/telemetry.jsonl. It lives in a
// child so that a device plugin failing here cannot take the host (or the run) down.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>

#include "plugins/manifest.hpp"

namespace mlhost {

class TelemetrySampler {
 public:
  // Starts sampling `worker` on device `device_index` of `plugin`. Each line of `out` is a
  // JSON object: time (seconds since the start), and the fields the plugin knows of
  // utilization_percent, memory_used_bytes, memory_total_bytes, temperature_celsius,
  // power_watts. A plugin without telemetry (or whose samples all fail) leaves no file.
  TelemetrySampler(const PluginManifest& plugin, int32_t device_index, pid_t worker,
                   const std::filesystem::path& out, std::chrono::milliseconds interval);
  ~TelemetrySampler();  // stops the sampler
  TelemetrySampler(const TelemetrySampler&) = delete;
  TelemetrySampler& operator=(const TelemetrySampler&) = delete;

 private:
  pid_t pid_ = -1;
};

}  // namespace mlhost
