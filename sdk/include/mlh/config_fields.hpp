// The rules between an algorithm's config fields that a schema cannot say (one field must
// divide another, ...), checked after mlh::ConfigTable::parse, with errors that name the field
// by its dotted path:
//   config field 'num_minibatches': must divide num_envs x num_steps (512)
// Reading single fields by hand (config_field) is deprecated: a ConfigTable declares and
// reads every field (config_table.hpp).
#ifndef MLH_CONFIG_FIELDS_HPP
#define MLH_CONFIG_FIELDS_HPP

#include <string>

#include <nlohmann/json.hpp>

#include "plugin.hpp"

namespace mlh {

// The value of `j[key]`, whose dotted path is `path`; missing or of the wrong type throws
// mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming the path.
template <class T>
[[deprecated("declare the field in an mlh::ConfigTable (mlh/config_table.hpp), whose parse() reads and checks it; see sdk-changelog.md")]]
T config_field(const nlohmann::json& j, const std::string& key, const std::string& path) {
  if (!j.is_object() || !j.contains(key))
    throw Error(MLH_ERR_INVALID_ARGUMENT, "config field '" + path + "' is missing");
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(MLH_ERR_INVALID_ARGUMENT,
                "config field '" + path + "': unexpected value " + j.at(key).dump() + " (" + e.what() + ")");
  }
}

// Throws mlh::Error(MLH_ERR_INVALID_ARGUMENT) "config field 'path': what" unless `ok`.
inline void config_check(bool ok, const std::string& path, const std::string& what) {
  if (!ok) throw Error(MLH_ERR_INVALID_ARGUMENT, "config field '" + path + "': " + what);
}

}  // namespace mlh

#endif  // MLH_CONFIG_FIELDS_HPP
