// The algorithm's config: its defaults, the plan's preset, then what the user set (--config
// FILE, --set key=value), checked against the algorithm's JSON schema (the subset in
// docs/config.md).
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plugins/algorithm_info.hpp"

namespace mlhost {

// Bad configuration; the message names the file, field or value.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Reads a JSON object from `path`. Throws ConfigError naming the file (and line/column).
nlohmann::json load_config_file(const std::filesystem::path& path);

// The same from text already read (used by fuzzing); `origin` names the file in messages.
nlohmann::json parse_config_text(const std::string& text, const std::filesystem::path& origin);

// Deep merge: objects merge key by key, anything else in `overlay` replaces `base`.
nlohmann::json merge_config(nlohmann::json base, const nlohmann::json& overlay);

// Applies one --set "a.b.c=value". The value is read as JSON (numbers, true/false, null,
// arrays, quoted strings); if that fails, or the schema says the field is a string, it is
// taken as the literal text. A "path" field's relative value is made absolute from the current
// folder. Throws ConfigError naming the assignment.
void apply_set(nlohmann::json& config, const std::string& assignment, const nlohmann::json& schema);

// The fields the schema marks "path" (files and folders), made absolute where relative, from
// `from` (the folder the command was given in); "" and absolute values are left as they are.
void absolute_paths(nlohmann::json& config, const nlohmann::json& schema, const std::filesystem::path& from);

// Checks `config` against `schema`; throws ConfigError naming the first bad field
// ("config field 'optimizer.lr': expected a number, got \"abc\"").
void validate_config(const nlohmann::json& config, const nlohmann::json& schema);

// The config a run of `algorithm` gets: its defaults, the plan's preset (its "$..." keys
// describe it and are left out), what the user set; the plan's batch size fills "batch_size"
// when the algorithm has one. Validated; throws ConfigError naming the first bad field.
nlohmann::json run_config(const AlgorithmInfo& algorithm, const nlohmann::json& user, const nlohmann::json& plan);

}  // namespace mlhost
