#include "probe/probe.hpp"

#include <mlh/device_traits.hpp>

#include "plugins/isolated.hpp"
#include "plugins/manifest_notes.hpp"
#include "plugins/plugin_loader.hpp"

namespace mlhost {

using nlohmann::json;

const char* probe_status_name(PluginProbe::Status s) {
  switch (s) {
    case PluginProbe::Status::kOk: return "ok";
    case PluginProbe::Status::kFailed: return "failed";
    case PluginProbe::Status::kRefused: return "refused";
    case PluginProbe::Status::kNotInstalled: return "not installed";
  }
  return "?";
}

// One per LibTorch backend the host knows (mlh/device_traits.hpp), named by its type.
const std::vector<std::string>& standard_device_plugins() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const mlh::DeviceTraits& t : mlh::kDeviceTraits) n.push_back(t.type);
    return n;
  }();
  return names;
}

json probe_one_plugin(const PluginManifest& manifest) {
  try {
    LoadedPlugin plugin = load_plugin(manifest);
    const mlh_device_plugin* table = plugin.device_table();
    PluginInstance<mlh_device_plugin> instance(table, manifest.name);
    const mlh_device_record* records = nullptr;
    uint32_t count = 0;
    mlh_error err = make_error();
    mlh_status status = MLH_OK;
    try {
      status = table->probe(instance.get(), &records, &count, &err);
    } catch (const std::exception& e) {
      // The ABI forbids this; a plugin written without the helper can still do it.
      return {{"error", std::string("probe threw a C++ exception across the C ABI (a plugin bug): ") + e.what()}};
    } catch (...) {
      return {{"error", "probe threw an exception across the C ABI (a plugin bug)"}};
    }
    if (status != MLH_OK) return {{"error", "probe failed: " + describe_error(status, err)}};
    json devices = json::array();
    for (const Device& d : devices_from_records(manifest.name, records, count)) devices.push_back(device_to_json(d));
    return {{"abi", std::to_string(plugin.abi_major()) + "." + std::to_string(plugin.abi_minor())},
            {"devices", devices}};
  } catch (const PluginLoadError& e) {
    return {{"error", e.what()}};
  } catch (const MalformedRecord& e) {
    return {{"error", std::string("returned malformed records: ") + e.what()}};
  }
}

std::vector<PluginProbe> probe_device_plugins(const Discovery& discovery, std::chrono::milliseconds timeout) {
  std::vector<PluginProbe> probes;
  std::vector<IsolatedJob> jobs;
  std::vector<size_t> job_owner;
  std::vector<const PluginManifest*> job_manifest;
  for (const DiscoveredPlugin& p : discovery.plugins) {
    if (p.manifest.kind != "device") continue;
    PluginProbe probe;
    probe.name = p.manifest.name;
    probe.version = p.manifest.version;
    probe.library = p.manifest.library_path.string();
    probe.origin = p.origin;
    probe.warnings = p.warnings;
    if (!p.usable()) {
      probe.status = PluginProbe::Status::kRefused;
      probe.reason = *p.refused;
    } else {
      const PluginManifest manifest = p.manifest;
      jobs.push_back([manifest] { return probe_one_plugin(manifest).dump(); });
      job_owner.push_back(probes.size());
      job_manifest.push_back(&p.manifest);
    }
    probes.push_back(std::move(probe));
  }

  const std::vector<IsolatedOutcome> outcomes = run_isolated(jobs, timeout);
  for (size_t k = 0; k < outcomes.size(); ++k) {
    PluginProbe& probe = probes[job_owner[k]];
    const IsolatedOutcome& o = outcomes[k];
    probe.elapsed_ms = o.elapsed_ms;
    probe.status = PluginProbe::Status::kFailed;
    if (!o.ok()) {
      probe.reason = "probe " + o.failure_reason();
      continue;
    }
    try {
      json answer = json::parse(o.payload);
      if (answer.contains("error")) {
        probe.reason = answer.at("error").get<std::string>();
        continue;
      }
      probe.abi = answer.at("abi").get<std::string>();
      if (auto mismatch = negotiated_abi_mismatch(*job_manifest[k], probe.abi)) probe.warnings.push_back(*mismatch);
      for (const json& d : answer.at("devices")) probe.devices.push_back(device_from_json(d));
      probe.status = PluginProbe::Status::kOk;
    } catch (const std::exception& e) {
      probe.reason = std::string("probe child sent an unreadable answer: ") + e.what();
    }
  }

  for (const std::string& name : standard_device_plugins()) {
    if (discovery.find_any("device", name)) continue;
    PluginProbe missing;
    missing.name = name;
    missing.status = PluginProbe::Status::kNotInstalled;
    missing.reason = "not installed (no " + name + ".plugin.json in the plugin search path)";
    probes.push_back(std::move(missing));
  }
  return probes;
}

std::vector<Device> all_devices(const std::vector<PluginProbe>& probes) {
  std::vector<Device> out;
  for (const auto& p : probes)
    if (p.status == PluginProbe::Status::kOk) out.insert(out.end(), p.devices.begin(), p.devices.end());
  return out;
}

}  // namespace mlhost
