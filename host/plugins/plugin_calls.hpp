// Calls into plugins that the host makes outside probing, each in a child process of its
// own (isolated.hpp) so that a failing plugin cannot take the host down.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "plugins/manifest.hpp"

namespace mlhost {

// The algorithm's describe(): {name, version, summary, commands, config_schema,
// config_defaults, presets}. Throws HostError naming the plugin and what went wrong.
nlohmann::json describe_algorithm(const PluginManifest& manifest);

// The device plugin's prepare() for device `device_index` and `plan`: the environment
// variables (name -> value) to set before LibTorch starts. Throws HostError.
nlohmann::json prepare_environment(const PluginManifest& manifest, int32_t device_index, const nlohmann::json& plan);

}  // namespace mlhost
