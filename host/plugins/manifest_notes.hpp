// What a plugin's manifest says that its user should hear about though the plugin is usable:
// an ABI newer than this host's, a library built without optimization, and (once its code
// has answered) an ABI the code negotiated that the manifest did not promise.
// --list-plugins (manifests only) shows the first two; --probe shows all three.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plugins/manifest.hpp"

namespace mlhost {

// Notes on a manifest alone, as warnings for the listings.
std::vector<std::string> manifest_notes(const PluginManifest& manifest);

// The version a plugin's code should negotiate with this host, by its manifest: the
// manifest's major, and the lower of its minor and the host's.
std::string promised_abi(const PluginManifest& manifest);

// Where the code negotiated `negotiated` ("1.1") though the manifest promises another: a
// sentence saying so (the manifest does not describe this library); nullopt where they agree.
std::optional<std::string> negotiated_abi_mismatch(const PluginManifest& manifest, const std::string& negotiated);

}  // namespace mlhost
