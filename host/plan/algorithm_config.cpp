#include "plan/algorithm_config.hpp"

#include <fstream>
#include <sstream>

#include <mlh/config_schema.hpp>

namespace mlhost {

using nlohmann::json;

namespace {

using mlh::config_schema_detail::show;

// The schema of the field at `keys`, or null.
const json* schema_at(const json& schema, const std::vector<std::string>& keys) {
  const json* s = &schema;
  for (const auto& k : keys) {
    if (!s->is_object() || !s->contains("properties") || !(*s)["properties"].contains(k)) return nullptr;
    s = &(*s)["properties"][k];
  }
  return s;
}

bool is_path_field(const json* field) { return field && field->is_object() && field->value("path", false); }

// A relative file or folder name as an absolute one from `from`, without "." or ".."; anything
// else (absolute, "", not a string) as it is.
json absolute_path(const json& value, const std::filesystem::path& from) {
  if (value.is_array()) {
    json out = json::array();
    for (const json& v : value) out.push_back(absolute_path(v, from));
    return out;
  }
  if (!value.is_string() || value.get<std::string>().empty()) return value;
  const std::filesystem::path p = value.get<std::string>();
  return p.is_absolute() ? value : json((from / p).lexically_normal().string());
}

}  // namespace

void absolute_paths(json& config, const json& schema, const std::filesystem::path& from) {
  if (!config.is_object() || !schema.is_object() || !schema.contains("properties")) return;
  for (auto& [key, value] : config.items()) {
    const json& properties = schema["properties"];
    if (!properties.contains(key)) continue;
    const json& field = properties[key];
    if (is_path_field(&field)) value = absolute_path(value, from);
    else absolute_paths(value, field, from);
  }
}

json load_config_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError("config file '" + path.string() + "': cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_config_text(text.str(), path);
}

json parse_config_text(const std::string& s, const std::filesystem::path& path) {
  json doc;
  try {
    doc = json::parse(s);
  } catch (const json::parse_error& e) {
    // e.byte is the offset of the error: turn it into line and column.
    size_t line = 1, col = 1;
    for (size_t i = 0; i + 1 < e.byte && i < s.size(); ++i) {
      if (s[i] == '\n') ++line, col = 1;
      else ++col;
    }
    throw ConfigError("config file '" + path.string() + "': invalid JSON at line " + std::to_string(line) +
                      ", column " + std::to_string(col));
  } catch (const json::exception& e) {
    // Not a syntax error but a value the parser cannot hold (a number out of range).
    const std::string what = e.what();
    throw ConfigError("config file '" + path.string() + "': invalid JSON: " + what.substr(what.find("] ") + 2));
  }
  if (!doc.is_object()) throw ConfigError("config file '" + path.string() + "': must hold a JSON object");
  return doc;
}

json merge_config(json base, const json& overlay) {
  if (!base.is_object() || !overlay.is_object()) return overlay;
  for (const auto& [key, value] : overlay.items())
    base[key] = base.contains(key) ? merge_config(base[key], value) : value;
  return base;
}

void apply_set(json& config, const std::string& assignment, const json& schema) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError("--set '" + assignment + "': expected key=value");
  const std::string key = assignment.substr(0, eq), text = assignment.substr(eq + 1);
  std::vector<std::string> keys;
  std::stringstream in(key);
  for (std::string k; std::getline(in, k, '.');) {
    if (k.empty()) throw ConfigError("--set '" + assignment + "': empty part in key '" + key + "'");
    keys.push_back(k);
  }
  if (key.back() == '.') throw ConfigError("--set '" + assignment + "': empty part in key '" + key + "'");

  json value = json::parse(text, nullptr, /*allow_exceptions=*/false);
  const json* field = schema_at(schema, keys);
  const bool wants_string = field && field->is_object() && field->value("type", json()) == "string";
  if (value.is_discarded() || text.empty() || (wants_string && !value.is_string())) value = text;
  if (is_path_field(field)) value = absolute_path(value, std::filesystem::current_path());

  json* node = &config;
  for (size_t i = 0; i + 1 < keys.size(); ++i) {
    json& next = (*node)[keys[i]];
    if (next.is_null()) next = json::object();
    if (!next.is_object())
      throw ConfigError("--set '" + assignment + "': '" + keys[i] + "' holds " + show(next) + ", not an object");
    node = &next;
  }
  (*node)[keys.back()] = value;
}

void validate_config(const json& config, const json& schema) {
  const std::string bad = mlh::config_schema_violation(config, schema);
  if (!bad.empty()) throw ConfigError(bad);
}

json run_config(const AlgorithmInfo& algorithm, const json& user, const json& plan) {
  json config = algorithm.config_defaults;
  if (plan["preset"].is_string()) {
    json preset = algorithm.presets.at(plan["preset"].get<std::string>());
    for (auto it = preset.begin(); it != preset.end();) {
      if (it.key().rfind('$', 0) == 0) it = preset.erase(it);
      else ++it;
    }
    config = merge_config(config, preset);
  }
  config = merge_config(config, user);
  if (!plan["batch_size"].is_null() && algorithm.has_batch_size()) config["batch_size"] = plan["batch_size"];
  validate_config(config, algorithm.config_schema);
  return config;
}

}  // namespace mlhost
