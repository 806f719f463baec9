// Plugin manifests (<name>.plugin.json): parse_manifest, as read_manifest uses it.
#include <cstdint>
#include <string>

#include "plugins/manifest.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const mlhost::PluginManifest m = mlhost::parse_manifest(text, "/plugins/fuzz.plugin.json");
    (void)mlhost::manifest_to_json(m).dump();
  } catch (const mlhost::ManifestError&) {
  }
  return 0;
}
