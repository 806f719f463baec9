#include "probe/backends.hpp"

#include <algorithm>

#include "probe/torch_backend.hpp"

namespace mlhost {
namespace {

std::string torch_word(const PluginManifest& m) {
  if (!m.torch_version) return m.name + " (no LibTorch)";
  return m.name + " (LibTorch " + *m.torch_version + " for " + torch_backend_list(m) + ")";
}

bool runs(const PluginManifest& m, const std::string& type) {
  return m.torch_version && std::find(m.torch_backends.begin(), m.torch_backends.end(), type) != m.torch_backends.end();
}

}  // namespace

std::string torch_backend_list(const PluginManifest& m) {
  std::string list;
  for (const std::string& type : m.torch_backends) list += (list.empty() ? "" : ", ") + type;
  return list.empty() ? "no device type" : list;
}

void require_torch_backends(std::vector<PluginProbe>& probes, const std::vector<PluginManifest>& algorithms) {
  if (algorithms.empty()) return;
  std::string seen;
  for (const auto& a : algorithms) seen += (seen.empty() ? "" : ", ") + torch_word(a);
  for (auto& p : probes) {
    for (auto& d : p.devices) {
      if (!d.available) continue;
      // The host's CPU runs every plugin, with LibTorch or without; a backend the trait table
      // does not know is tried: its worker says if LibTorch lacks it.
      const TorchBackend& backend = torch_backend(d);
      if (!backend.accelerator || !*backend.type) continue;
      if (std::any_of(algorithms.begin(), algorithms.end(), [&](const PluginManifest& a) { return runs(a, backend.type); }))
        continue;
      d.available = false;
      d.unavailable_reason = std::string("no algorithm plugin has a LibTorch with ") + backend.name + " (" + seen + ")";
    }
  }
}

}  // namespace mlhost
