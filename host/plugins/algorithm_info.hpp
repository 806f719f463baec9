// What an algorithm plugin says of itself (its describe()), typed: the commands it runs, its
// config's schema, defaults and presets. Planning and the commands ask it questions ("has a
// calibrate command?", "has a batch size?") instead of reading the JSON in several places.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plugins/manifest.hpp"

namespace mlhost {

struct AlgorithmInfo {
  PluginManifest manifest;             // name, version, the LibTorch it was built with
  std::string abi;                     // the ABI version its code negotiated ("1.1")
  std::string summary;
  std::vector<std::string> commands;   // never empty; the first is the default
  nlohmann::json config_schema = nlohmann::json::object();
  nlohmann::json config_defaults = nlohmann::json::object();
  nlohmann::json presets = nlohmann::json::object();

  const std::string& name() const { return manifest.name; }
  const std::string& default_command() const { return commands.front(); }
  bool has_command(const std::string& command) const;
  // Whether its config has a "batch_size" field: only then is the plan's batch size a batch
  // size it trains with (--batch-size, the batch size finder).
  bool has_batch_size() const;
  // The preset `name` (an object), or nullptr when the algorithm has none of that name.
  const nlohmann::json* preset(const std::string& name) const;
  // "train, eval, benchmark": for messages.
  std::string command_list() const;

  // The description as `host --describe` prints it and describe() answered it.
  nlohmann::json to_json() const;
  // From describe()'s answer. Throws std::runtime_error naming what is missing or malformed.
  static AlgorithmInfo from_description(const PluginManifest& manifest, const nlohmann::json& description);
};

}  // namespace mlhost
