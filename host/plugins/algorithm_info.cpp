#include "plugins/algorithm_info.hpp"

#include <algorithm>
#include <stdexcept>

namespace mlhost {

using nlohmann::json;

bool AlgorithmInfo::has_command(const std::string& command) const {
  return std::find(commands.begin(), commands.end(), command) != commands.end();
}

bool AlgorithmInfo::has_batch_size() const {
  const auto properties = config_schema.find("properties");
  return properties != config_schema.end() && properties->is_object() && properties->contains("batch_size");
}

const json* AlgorithmInfo::preset(const std::string& name) const {
  const auto it = presets.find(name);
  return it != presets.end() && it->is_object() ? &*it : nullptr;
}

std::string AlgorithmInfo::command_list() const {
  std::string list;
  for (const std::string& c : commands) list += (list.empty() ? "" : ", ") + c;
  return list;
}

json AlgorithmInfo::to_json() const {
  return {{"name", manifest.name},
          {"version", manifest.version},
          {"abi", abi},
          {"summary", summary},
          {"commands", commands},
          {"config_schema", config_schema},
          {"config_defaults", config_defaults},
          {"presets", presets}};
}

AlgorithmInfo AlgorithmInfo::from_description(const PluginManifest& manifest, const json& d) {
  const std::string who = "algorithm plugin '" + manifest.name + "': describe's ";
  auto object = [&](const char* key) {
    if (!d.contains(key) || !d[key].is_object()) throw std::runtime_error(who + key + " is not a JSON object");
    return d[key];
  };
  AlgorithmInfo info;
  info.manifest = manifest;
  info.abi = d.value("abi", std::string());
  info.summary = d.value("summary", std::string());
  if (!d.contains("commands") || !d["commands"].is_array()) throw std::runtime_error(who + "commands is not a list");
  for (const json& c : d["commands"]) {
    if (!c.is_string() || c.get<std::string>().empty()) throw std::runtime_error(who + "commands holds a non-name");
    info.commands.push_back(c.get<std::string>());
  }
  if (info.commands.empty()) throw std::runtime_error(who + "commands is empty");
  info.config_schema = object("config_schema");
  info.config_defaults = object("config_defaults");
  info.presets = object("presets");
  return info;
}

}  // namespace mlhost
