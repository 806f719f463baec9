// The probe report: readable text for people, JSON (schema in docs/probe-json.md) for tools.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plugins/discovery.hpp"
#include "probe/probe.hpp"
#include "probe/ranking.hpp"

namespace mlhost {

struct PlatformInfo {
  std::string os, kernel, arch;
  long cpu_threads_online = 0;
};

PlatformInfo read_platform_info();

struct ProbeReport {
  PlatformInfo platform;
  Discovery discovery;
  std::vector<PluginProbe> plugins;
  DeviceRequest request;
  bool no_gpu = false;
  Ranking ranking;
  double elapsed_ms = 0;
};

// Probes every device plugin `discovery` found and ranks their devices: what --probe shows
// and a run starts from. GPUs that none of `algorithms` can drive are unavailable
// (backends.hpp); `timeout`: how long one plugin may take to probe.
ProbeReport probe_and_rank(const Discovery& discovery, const std::vector<PluginManifest>& algorithms,
                           const DeviceRequest& request, bool no_gpu, std::chrono::milliseconds timeout);

nlohmann::json probe_report_to_json(const ProbeReport& report);
std::string probe_report_to_text(const ProbeReport& report);

// `host --list-plugins`: every manifest found, loadable or not (no code is loaded).
nlohmann::json plugin_list_to_json(const Discovery& discovery);
std::string plugin_list_to_text(const Discovery& discovery);

}  // namespace mlhost
