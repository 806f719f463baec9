// Config JSON (--config FILE): parse_config_text (what load_config_file reads), merged over
// defaults and validated against a schema with every keyword the validator knows.
#include <cstdint>
#include <string>

#include "plan/algorithm_config.hpp"

namespace {

const nlohmann::json& schema() {
  static const nlohmann::json s = nlohmann::json::parse(R"({
    "type": "object", "additionalProperties": false, "required": ["epochs"],
    "properties": {
      "epochs": {"type": "integer", "minimum": 1, "maximum": 100000},
      "lr": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 10},
      "name": {"type": "string"},
      "mode": {"enum": ["fast", "slow", 3, null]},
      "either": {"type": ["integer", "string"]},
      "flags": {"type": "array", "items": {"type": "boolean"}},
      "optimizer": {"type": "object", "properties": {
        "kind": {"type": "string", "enum": ["adam", "sgd"]},
        "betas": {"type": "array", "items": {"type": "number", "minimum": 0, "maximum": 1}},
        "nested": {"type": "object", "additionalProperties": false,
                   "properties": {"x": {"type": "null"}, "y": {"type": "weird"}}}}}
    }})");
  return s;
}

const nlohmann::json& defaults() {
  static const nlohmann::json d = nlohmann::json::parse(
      R"({"epochs": 3, "lr": 0.1, "name": "x", "optimizer": {"kind": "adam", "betas": [0.9, 0.99]}})");
  return d;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const nlohmann::json doc = mlhost::parse_config_text(text, "fuzz-config.json");
    const nlohmann::json merged = mlhost::merge_config(defaults(), doc);
    mlhost::validate_config(merged, schema());
  } catch (const mlhost::ConfigError&) {
  }
  // The document itself as a schema: plugins' schemas are outside input to the host too.
  try {
    const nlohmann::json doc = mlhost::parse_config_text(text, "fuzz-schema.json");
    mlhost::validate_config(defaults(), doc);
  } catch (const mlhost::ConfigError&) {
  }
  return 0;
}
