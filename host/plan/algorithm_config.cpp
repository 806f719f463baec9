#include "plan/algorithm_config.hpp"

#include <cmath>
#include <fstream>
#include <sstream>

namespace mlhost {

using nlohmann::json;

namespace {

std::string show(const json& v) {
  // Replace, not throw on, invalid UTF-8: --set values are the user's bytes as given.
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() > 80 ? s.substr(0, 77) + "..." : s;
}

bool has_type(const json& v, const std::string& type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  if (type == "number") return v.is_number();
  if (type == "integer")
    return v.is_number_integer() || (v.is_number_float() && std::isfinite(v.get<double>()) &&
                                      std::floor(v.get<double>()) == v.get<double>());
  return true;  // an unknown type word in a plugin's schema is not the user's fault
}

std::string type_words(const json& t) {
  if (t.is_string()) return (t == "integer" || t == "array" || t == "object" ? "an " : "a ") + t.get<std::string>();
  std::string out;
  for (const auto& x : t)
    if (x.is_string()) out += (out.empty() ? "" : " or ") + x.get<std::string>();
  return out.empty() ? "a value of type " + t.dump() : out;
}

void check(const json& v, const json& schema, const std::string& path) {
  if (!schema.is_object()) return;
  const std::string where = "config field '" + (path.empty() ? std::string("(root)") : path) + "'";
  if (auto t = schema.find("type"); t != schema.end()) {
    bool ok = false;
    if (t->is_string()) ok = has_type(v, *t);
    else if (t->is_array())
      for (const auto& x : *t) ok = ok || (x.is_string() && has_type(v, x));
    else ok = true;
    if (!ok) throw ConfigError(where + ": expected " + type_words(*t) + ", got " + show(v));
  }
  if (auto e = schema.find("enum"); e != schema.end() && e->is_array()) {
    bool found = false;
    for (const auto& x : *e) found = found || x == v;
    if (!found) throw ConfigError(where + ": " + show(v) + " is not one of " + show(*e));
  }
  if (v.is_number()) {
    const double x = v.get<double>();
    auto bound = [&](const char* key, bool ok_if_less, bool strict) {
      auto b = schema.find(key);
      if (b == schema.end() || !b->is_number()) return;
      const double lim = b->get<double>();
      const bool ok = ok_if_less ? (strict ? x < lim : x <= lim) : (strict ? x > lim : x >= lim);
      if (!ok)
        throw ConfigError(where + ": " + show(v) + " must be " + (ok_if_less ? "<" : ">") + (strict ? "" : "=") +
                          " " + show(*b));
    };
    bound("minimum", false, false);
    bound("exclusiveMinimum", false, true);
    bound("maximum", true, false);
    bound("exclusiveMaximum", true, true);
  }
  if (v.is_object()) {
    const json* props = schema.contains("properties") ? &schema["properties"] : nullptr;
    if (auto req = schema.find("required"); req != schema.end() && req->is_array())
      for (const auto& k : *req)
        if (k.is_string() && !v.contains(k.get<std::string>()))
          throw ConfigError("config field '" + (path.empty() ? "" : path + ".") + k.get<std::string>() +
                            "' is required");
    const auto extra = schema.find("additionalProperties");
    const bool closed = extra != schema.end() && *extra == false;
    for (const auto& [key, value] : v.items()) {
      const std::string sub = path.empty() ? key : path + "." + key;
      if (props && props->contains(key))
        check(value, (*props)[key], sub);
      else if (closed) {
        std::string known;
        if (props)
          for (const auto& [k, unused] : props->items()) known += (known.empty() ? "" : ", ") + k;
        throw ConfigError("config field '" + sub + "' is unknown" + (known.empty() ? "" : " (known: " + known + ")"));
      }
    }
  }
  if (v.is_array()) {
    if (auto items = schema.find("items"); items != schema.end())
      for (size_t i = 0; i < v.size(); ++i) check(v[i], *items, path + "[" + std::to_string(i) + "]");
  }
}

// The schema of the field at `keys`, or null.
const json* schema_at(const json& schema, const std::vector<std::string>& keys) {
  const json* s = &schema;
  for (const auto& k : keys) {
    if (!s->is_object() || !s->contains("properties") || !(*s)["properties"].contains(k)) return nullptr;
    s = &(*s)["properties"][k];
  }
  return s;
}

}  // namespace

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

void validate_config(const json& config, const json& schema) { check(config, schema, ""); }

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
