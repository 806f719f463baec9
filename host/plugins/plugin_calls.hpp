// Calls into plugins that the host makes outside probing, each in a child process of its
// own (isolated.hpp) so that a failing plugin cannot take the host down.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "plugins/algorithm_info.hpp"
#include "plugins/manifest.hpp"

namespace mlhost {

// The algorithm's describe(). Throws HostError naming the plugin and what went wrong.
AlgorithmInfo describe_algorithm(const PluginManifest& manifest);

// What a run would do (ABI 1.1's describe_run): {"model": {...}, "plan_fields": {...}} for
// this command, config, device record, plan and run folder (which need not exist yet; eval
// reads a trained run's model from it); null when the plugin does not say (built against ABI
// 1.0, or without describe_run). Throws HostError when it fails or answers something else than
// a JSON object.
nlohmann::json describe_run(const PluginManifest& manifest, const std::string& command, const nlohmann::json& config,
                            const nlohmann::json& device, const nlohmann::json& plan, const std::string& run_dir);

// The device plugin's prepare() for device `device_index` and `plan`: the environment
// variables (name -> value) to set before LibTorch starts. Throws HostError.
nlohmann::json prepare_environment(const PluginManifest& manifest, int32_t device_index, const nlohmann::json& plan);

}  // namespace mlhost
