// An algorithm's config fields, declared once: name, type, default, bounds or choices, unit
// and a one-line description, each bound to the member of the parsed struct it fills. The
// table gives everything else:
//   schema()   the JSON schema the host checks runs against (describe's config_schema_json),
//   defaults() the defaults (describe's config_defaults_json),
//   parse()    the typed struct from a (partial) config, checked against the same schema,
//              errors naming the field by its dotted path.
// The host's `--describe NAME --format markdown` turns the schema into the config reference.
//
//   struct Config { int64_t epochs = 0; std::string distance; };
//   const mlh::ConfigTable<Config>& table() {
//     static const auto t = mlh::ConfigTable<Config>("myalgo")
//         .field("epochs", MLH_MEMBER(epochs), 10, mlh::at_least(1).unit("epochs"), "passes over the data")
//         .field("distance", MLH_MEMBER(distance), "euclidean", mlh::one_of({"euclidean", "cosine"}),
//                "how queries are compared with the class prototypes");
//     return t;
//   }
//
// Rules between fields (one must divide another, ...) stay code: check them after parse()
// with mlh::config_check (config_fields.hpp).
#ifndef MLH_CONFIG_TABLE_HPP
#define MLH_CONFIG_TABLE_HPP

#include <cmath>
#include <functional>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "config_schema.hpp"
#include "plugin.hpp"

// The member of a config struct a field fills, by its path in the struct: MLH_MEMBER(model.hidden).
#define MLH_MEMBER(member) [](auto& config_) -> auto& { return config_.member; }

namespace mlh {

// What values a field accepts beyond its type, and its unit. Built by chaining:
// mlh::at_least(1).unit("steps"), mlh::between(0, 1), mlh::one_of({"adamw", "adam_atan2"}).
class FieldRule {
 public:
  FieldRule& min(double v) { return set("minimum", v); }
  FieldRule& above(double v) { return set("exclusiveMinimum", v); }
  FieldRule& max(double v) { return set("maximum", v); }
  FieldRule& below(double v) { return set("exclusiveMaximum", v); }
  FieldRule& choices(nlohmann::json values) { return set("enum", std::move(values)); }
  // Lists: each item at least `v`; at least `n` items.
  FieldRule& items_at_least(double v) {
    item_minimum_ = v;
    return *this;
  }
  FieldRule& min_items(size_t n) { return set("minItems", n); }
  // A list of strings that also takes one string (a lone "" is the empty list).
  FieldRule& or_one_string() {
    or_one_string_ = true;
    return *this;
  }
  FieldRule& unit(std::string u) { return set("unit", std::move(u)); }
  // Its value does not change what a training step computes or how fast (a learning rate, a
  // schedule's length, a seed, an evaluation's size): the host's calibration and device
  // measurements of one config hold for any value of it ("speed_neutral" in the schema).
  FieldRule& speed_neutral() { return set("speed_neutral", true); }
  // Its value names a file or folder (a string, or a list of them): the host records one the
  // user gives relative as absolute, from the folder the command was given in, so that later
  // commands on the run (eval, --resume) find it from any folder ("path" in the schema).
  FieldRule& path() { return set("path", true); }

  const nlohmann::json& keywords() const { return keywords_; }
  const std::optional<double>& item_minimum() const { return item_minimum_; }
  bool takes_one_string() const { return or_one_string_; }

 private:
  FieldRule& set(const char* key, nlohmann::json value) {
    keywords_[key] = std::move(value);
    return *this;
  }
  nlohmann::json keywords_ = nlohmann::json::object();
  std::optional<double> item_minimum_;
  bool or_one_string_ = false;
};

inline FieldRule any_value() { return {}; }
inline FieldRule at_least(double v) { return FieldRule().min(v); }
inline FieldRule above(double v) { return FieldRule().above(v); }
inline FieldRule between(double lo, double hi) { return FieldRule().min(lo).max(hi); }
// A list, not a json: nlohmann reads {"a", "b"} as the object {"a": "b"}.
inline FieldRule one_of(std::initializer_list<nlohmann::json> values) {
  nlohmann::json list = nlohmann::json::array();
  for (const nlohmann::json& v : values) list.push_back(v);
  return FieldRule().choices(std::move(list));
}
[[deprecated("use mlh::any_value().unit(u); see sdk-changelog.md")]]
inline FieldRule with_unit(std::string u) { return FieldRule().unit(std::move(u)); }
inline FieldRule speed_neutral() { return FieldRule().speed_neutral(); }
inline FieldRule path() { return FieldRule().path(); }

namespace config_table_detail {

template <class T> struct is_vector : std::false_type {};
template <class T, class A> struct is_vector<std::vector<T, A>> : std::true_type {};
template <class T> struct is_optional : std::false_type {};
template <class T> struct is_optional<std::optional<T>> : std::true_type {};

// The JSON Schema type of a C++ member type.
template <class T>
nlohmann::json type_of() {
  if constexpr (std::is_same_v<T, bool>) return "boolean";
  else if constexpr (std::is_integral_v<T>) return "integer";
  else if constexpr (std::is_floating_point_v<T>) return "number";
  else if constexpr (std::is_same_v<T, std::string>) return "string";
  else if constexpr (std::is_same_v<T, nlohmann::json>) return "object";  // a JSON object passed on as it is
  else if constexpr (is_optional<T>::value) return nlohmann::json::array({type_of<typename T::value_type>(), "null"});
  else {
    static_assert(is_vector<T>::value, "a config field is a bool, number, string, optional number, vector or nlohmann::json object");
    return "array";
  }
}

// Whole-number bounds print as integers ("minimum": 1, not 1.0).
inline void whole_numbers(nlohmann::json& keywords) {
  for (auto& [key, value] : keywords.items()) {
    if (!value.is_number_float()) continue;
    const double x = value.get<double>();
    if (std::abs(x) < 9.0e15 && x == static_cast<double>(static_cast<int64_t>(x))) value = static_cast<int64_t>(x);
  }
}

}  // namespace config_table_detail

// Built in one expression, as above: each declaration returns the table being built (an
// rvalue), so a function-local `static const auto` holds it for the plugin's lifetime.
template <class Config>
class ConfigTable {
 public:
  // `name` starts messages about the config as a whole ("ppo config: expected a JSON object").
  explicit ConfigTable(std::string name) : name_(std::move(name)) {}

  // A field at `path` (dotted for nested objects: "model.hidden"), filling the member that
  // `member` returns (MLH_MEMBER), `default_value` when the config leaves it out.
  template <class Member>
  ConfigTable&& field(const std::string& path, Member member, nlohmann::json default_value, const FieldRule& rule,
                      const std::string& description) && {
    using T = std::decay_t<decltype(member(std::declval<Config&>()))>;
    Field f{path, schema_of<T>(rule, description), std::move(default_value), true, nullptr, nullptr};
    const bool one_string = rule.takes_one_string();
    f.read = [member, path, one_string](Config& c, const nlohmann::json& v) { member(c) = convert<T>(v, path, one_string); };
    f.write = [member](const Config& c) { return to_value(member(c)); };
    add(std::move(f));
    return std::move(*this);
  }

  // A field the host reads and the algorithm does not (e.g. "preset"): in the schema, with
  // no default and no member.
  ConfigTable&& host_field(const std::string& path, const nlohmann::json& type, const std::string& description) && {
    add(Field{path, {{"type", type}, {"description", description}}, nullptr, false, nullptr, nullptr});
    return std::move(*this);
  }

  // A field old configs may still hold, which no longer means anything: accepted with the
  // value `inert` (what every saved config holds), refused otherwise with `instead`.
  ConfigTable&& retired_field(const std::string& path, const nlohmann::json& inert, const std::string& instead) && {
    Field f{path, {{"description", "retired: " + instead}}, nullptr, false, nullptr, nullptr};
    f.read = [path, inert, instead](Config&, const nlohmann::json& v) {
      if (v != inert) throw Error(MLH_ERR_INVALID_ARGUMENT, "config field '" + path + "' is retired: " + instead);
    };
    add(std::move(f));
    return std::move(*this);
  }

  const nlohmann::json& schema() const { return schema_; }
  const nlohmann::json& defaults() const { return defaults_; }
  // Text forms for describe(); valid as long as the table.
  const std::string& schema_text() const { return text(schema_text_, schema_); }
  const std::string& defaults_text() const { return text(defaults_text_, defaults_); }

  // The struct from `user` (missing fields take the defaults; nested objects merge). Throws
  // mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming the first bad field.
  // The config's fields as JSON, nested as the table declares them: parse(to_json(c)) == c.
  // Also how a test holds a struct to the table: to_json(Config{}) shows any default a
  // struct declared beside the table's (there should be none: each member is {}).
  nlohmann::json to_json(const Config& c) const {
    nlohmann::json out = nlohmann::json::object();
    for (const Field& f : fields_) {
      if (!f.write) continue;
      nlohmann::json* node = &out;
      const std::vector<std::string> keys = split(f.path);
      for (size_t i = 0; i + 1 < keys.size(); ++i) node = &(*node)[keys[i]];
      (*node)[keys.back()] = f.write(c);
    }
    return out;
  }

  Config parse(const nlohmann::json& user) const {
    if (!user.is_object()) throw Error(MLH_ERR_INVALID_ARGUMENT, name_ + " config: expected a JSON object");
    nlohmann::json config = defaults_;
    merge(config, user);
    const std::string bad = config_schema_violation(config, schema_);
    if (!bad.empty()) throw Error(MLH_ERR_INVALID_ARGUMENT, bad);
    Config c;
    for (const Field& f : fields_) {
      if (!f.read) continue;
      const nlohmann::json* v = at(config, f.path);
      if (v) f.read(c, *v);
    }
    return c;
  }

 private:
  struct Field {
    std::string path;
    nlohmann::json schema;
    nlohmann::json default_value;
    bool has_default;
    std::function<void(Config&, const nlohmann::json&)> read;
    std::function<nlohmann::json(const Config&)> write;
  };

  template <class T>
  static nlohmann::json to_value(const T& v) {
    if constexpr (config_table_detail::is_optional<T>::value) return v ? nlohmann::json(*v) : nlohmann::json();
    else return nlohmann::json(v);
  }

  template <class T>
  static nlohmann::json schema_of(const FieldRule& rule, const std::string& description) {
    nlohmann::json s = {{"type", config_table_detail::type_of<T>()}};
    if constexpr (config_table_detail::is_vector<T>::value) {
      nlohmann::json items = {{"type", config_table_detail::type_of<typename T::value_type>()}};
      if (rule.item_minimum()) items["minimum"] = *rule.item_minimum();
      s["items"] = items;
      if (rule.takes_one_string()) s["type"] = {"string", "array"};
    }
    s.update(rule.keywords());
    config_table_detail::whole_numbers(s);
    if (s.contains("items")) config_table_detail::whole_numbers(s["items"]);
    s["description"] = description;
    return s;
  }

  template <class T>
  static T convert(const nlohmann::json& v, const std::string& path, bool one_string) {
    try {
      if constexpr (config_table_detail::is_optional<T>::value) {
        return v.is_null() ? T() : T(v.get<typename T::value_type>());
      } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
        if (one_string && v.is_string()) return v.get<std::string>().empty() ? T() : T{v.get<std::string>()};
        return v.get<T>();
      } else {
        return v.get<T>();
      }
    } catch (const nlohmann::json::exception& e) {
      throw Error(MLH_ERR_INVALID_ARGUMENT, "config field '" + path + "': unexpected value " + v.dump() + " (" + e.what() + ")");
    }
  }

  static std::vector<std::string> split(const std::string& path) {
    std::vector<std::string> keys;
    size_t start = 0;
    for (size_t dot; (dot = path.find('.', start)) != std::string::npos; start = dot + 1)
      keys.push_back(path.substr(start, dot - start));
    keys.push_back(path.substr(start));
    return keys;
  }

  static const nlohmann::json* at(const nlohmann::json& j, const std::string& path) {
    const nlohmann::json* node = &j;
    for (const std::string& k : split(path)) {
      if (!node->is_object() || !node->contains(k)) return nullptr;
      node = &(*node)[k];
    }
    return node;
  }

  // Objects merge key by key; anything else replaces (a null too: "target_kl": null is a value).
  static void merge(nlohmann::json& base, const nlohmann::json& overlay) {
    for (const auto& [key, value] : overlay.items()) {
      if (value.is_object() && base.contains(key) && base[key].is_object()) merge(base[key], value);
      else base[key] = value;
    }
  }

  void add(Field f) {
    const std::vector<std::string> keys = split(f.path);
    nlohmann::json* node = &schema_;
    nlohmann::json* defaults = &defaults_;
    for (size_t i = 0; i + 1 < keys.size(); ++i) {
      nlohmann::json& object = (*node)["properties"][keys[i]];
      if (object.is_null()) object = {{"type", "object"}, {"additionalProperties", false}};
      node = &object;
      defaults = &(*defaults)[keys[i]];
    }
    if (node->contains("properties") && (*node)["properties"].contains(keys.back()))
      throw std::logic_error(name_ + " config table: field '" + f.path + "' declared twice");
    (*node)["properties"][keys.back()] = f.schema;
    // A member's field always has a default (null for an optional one that is off); the
    // host's and retired fields have none.
    if (f.has_default) (*defaults)[keys.back()] = f.default_value;
    fields_.push_back(std::move(f));
  }

  static const std::string& text(std::string& cache, const nlohmann::json& j) {
    if (cache.empty()) cache = j.dump(2);
    return cache;
  }

  std::string name_;
  std::vector<Field> fields_;
  nlohmann::json schema_ = {{"type", "object"}, {"additionalProperties", false}};
  nlohmann::json defaults_ = nlohmann::json::object();
  mutable std::string schema_text_, defaults_text_;
};

}  // namespace mlh

#endif  // MLH_CONFIG_TABLE_HPP
