#include "plan/calibration/workload.hpp"

#include "plugins/sha256.hpp"

namespace mlhost {

using nlohmann::json;

json step_workload(const json& schema, const json& config) {
  if (!config.is_object()) return config;
  const json properties = schema.is_object() ? schema.value("properties", json::object()) : json::object();
  json out = json::object();
  for (const auto& [key, value] : config.items()) {
    const json field = properties.is_object() ? properties.value(key, json()) : json();
    if (field.is_object() && field.value("speed_neutral", false)) continue;
    out[key] = field.is_object() && field.contains("properties") ? step_workload(field, value) : value;
  }
  return out;
}

std::string workload_hash(const json& schema, const json& config) { return sha256_hex(step_workload(schema, config).dump()); }

}  // namespace mlhost
