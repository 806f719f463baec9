// Checking a config against an algorithm's JSON schema: the subset of JSON Schema that the
// host and the SDK's config tables understand (docs/config.md): type (a name or a list),
// properties, additionalProperties: false, required, enum, minimum, maximum,
// exclusiveMinimum, exclusiveMaximum, items, minItems. Other keywords (description, unit,
// default, ...) are annotations and ignored.
//
// One checker for both sides: the host checks a run's config before anything is written,
// and a plugin's config table checks the configs it is given without the host (tests,
// embedding) with the same rules and the same messages.
#ifndef MLH_CONFIG_SCHEMA_HPP
#define MLH_CONFIG_SCHEMA_HPP

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mlh {
namespace config_schema_detail {

using nlohmann::json;

inline std::string show(const json& v) {
  // Replace, not throw on, invalid UTF-8: --set values are the user's bytes as given.
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() > 80 ? s.substr(0, 77) + "..." : s;
}

inline bool has_type(const json& v, const std::string& type) {
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

inline std::string type_words(const json& t) {
  if (t.is_string()) return (t == "integer" || t == "array" || t == "object" ? "an " : "a ") + t.get<std::string>();
  std::string out;
  for (const auto& x : t)
    if (x.is_string()) out += (out.empty() ? "" : " or ") + x.get<std::string>();
  return out.empty() ? "a value of type " + t.dump() : out;
}

// The first violation of `schema` by `v` (whose dotted path is `path`), or "".
inline std::string first_violation(const json& v, const json& schema, const std::string& path) {
  if (!schema.is_object()) return "";
  const std::string where = "config field '" + (path.empty() ? std::string("(root)") : path) + "'";
  if (auto t = schema.find("type"); t != schema.end()) {
    bool ok = false;
    if (t->is_string()) ok = has_type(v, *t);
    else if (t->is_array())
      for (const auto& x : *t) ok = ok || (x.is_string() && has_type(v, x));
    else ok = true;
    if (!ok) return where + ": expected " + type_words(*t) + ", got " + show(v);
  }
  if (auto e = schema.find("enum"); e != schema.end() && e->is_array()) {
    bool found = false;
    for (const auto& x : *e) found = found || x == v;
    if (!found) return where + ": " + show(v) + " is not one of " + show(*e);
  }
  if (v.is_number()) {
    const double x = v.get<double>();
    for (const auto& [key, below, strict] : {std::tuple<const char*, bool, bool>{"minimum", false, false},
                                             {"exclusiveMinimum", false, true},
                                             {"maximum", true, false},
                                             {"exclusiveMaximum", true, true}}) {
      auto b = schema.find(key);
      if (b == schema.end() || !b->is_number()) continue;
      const double lim = b->get<double>();
      const bool ok = below ? (strict ? x < lim : x <= lim) : (strict ? x > lim : x >= lim);
      if (!ok) return where + ": " + show(v) + " must be " + (below ? "<" : ">") + (strict ? "" : "=") + " " + show(*b);
    }
  }
  if (v.is_object()) {
    const json* props = schema.contains("properties") ? &schema["properties"] : nullptr;
    if (auto req = schema.find("required"); req != schema.end() && req->is_array())
      for (const auto& k : *req)
        if (k.is_string() && !v.contains(k.get<std::string>()))
          return "config field '" + (path.empty() ? "" : path + ".") + k.get<std::string>() + "' is required";
    const auto extra = schema.find("additionalProperties");
    const bool closed = extra != schema.end() && *extra == false;
    for (const auto& [key, value] : v.items()) {
      const std::string sub = path.empty() ? key : path + "." + key;
      if (props && props->contains(key)) {
        std::string bad = first_violation(value, (*props)[key], sub);
        if (!bad.empty()) return bad;
      } else if (closed) {
        std::string known;
        if (props)
          for (const auto& [k, unused] : props->items()) known += (known.empty() ? "" : ", ") + k;
        return "config field '" + sub + "' is unknown" + (known.empty() ? "" : " (known: " + known + ")");
      }
    }
  }
  if (v.is_array()) {
    if (auto n = schema.find("minItems"); n != schema.end() && n->is_number_unsigned() && v.size() < n->get<size_t>())
      return where + ": needs at least " + std::to_string(n->get<size_t>()) + " item" + (n->get<size_t>() == 1 ? "" : "s");
    if (auto items = schema.find("items"); items != schema.end())
      for (size_t i = 0; i < v.size(); ++i) {
        std::string bad = first_violation(v[i], *items, path + "[" + std::to_string(i) + "]");
        if (!bad.empty()) return bad;
      }
  }
  return "";
}

}  // namespace config_schema_detail

// The first way `config` breaks `schema`, as a message naming the field ("config field
// 'optimizer.lr': expected a number, got \"abc\""), or "" when it holds.
inline std::string config_schema_violation(const nlohmann::json& config, const nlohmann::json& schema) {
  return config_schema_detail::first_violation(config, schema, "");
}

}  // namespace mlh

#endif  // MLH_CONFIG_SCHEMA_HPP
