// Probing: every loadable device plugin is asked for its devices in a child process of its
// own, all in parallel, with a timeout.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plugins/discovery.hpp"
#include "probe/device.hpp"

namespace mlhost {

struct PluginProbe {
  enum class Status { kOk, kFailed, kRefused, kNotInstalled };
  Status status = Status::kNotInstalled;
  std::string name, version, library, origin;
  std::string abi;     // negotiated version, e.g. "1.0"
  std::string reason;  // why it failed, was refused or is missing
  std::vector<std::string> warnings;
  std::vector<Device> devices;
  double elapsed_ms = 0;
};

const char* probe_status_name(PluginProbe::Status s);  // "ok", "failed", "refused", "not installed"

// The device plugins mlhost ships; the ones not found are reported as not installed.
const std::vector<std::string>& standard_device_plugins();

// Probes the usable device plugins of `discovery` and lists the refused and missing ones.
std::vector<PluginProbe> probe_device_plugins(const Discovery& discovery, std::chrono::milliseconds timeout);

// What the probe child does for one plugin: load, negotiate, create, probe, validate.
// Returns {"abi": ..., "devices": [...]} or {"error": ...}. Exposed for tests.
nlohmann::json probe_one_plugin(const PluginManifest& manifest);

// Every device of the successful probes, in plugin order.
std::vector<Device> all_devices(const std::vector<PluginProbe>& probes);

}  // namespace mlhost
