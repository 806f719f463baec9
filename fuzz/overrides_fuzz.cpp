// Command-line overrides (--set key=value, one per input line): apply_set on the defaults,
// then validate_config, as the host does for a run.
#include <cstdint>
#include <sstream>
#include <string>

#include "plan/algorithm_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const nlohmann::json schema = nlohmann::json::parse(R"({
    "type": "object", "additionalProperties": false,
    "properties": {
      "epochs": {"type": "integer", "minimum": 1},
      "name": {"type": "string"},
      "lr": {"type": "number", "exclusiveMinimum": 0},
      "tags": {"type": "array", "items": {"type": "string"}},
      "optimizer": {"type": "object", "properties": {"kind": {"type": "string"}, "lr": {"type": "number"}}}
    }})");
  nlohmann::json config = nlohmann::json::parse(R"({"epochs": 3, "name": "run", "optimizer": {"kind": "adam"}})");
  std::istringstream lines(std::string(reinterpret_cast<const char*>(data), size));
  for (std::string line; std::getline(lines, line);) {
    try {
      mlhost::apply_set(config, line, schema);
    } catch (const mlhost::ConfigError&) {
    }
  }
  try {
    mlhost::validate_config(config, schema);
  } catch (const mlhost::ConfigError&) {
  }
  return 0;
}
