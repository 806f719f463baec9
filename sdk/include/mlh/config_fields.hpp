// Reading an algorithm's run config (a JSON object the host already checked against the
// plugin's schema) into typed fields, with errors that name the field by its dotted path:
//   config field 'model.hidden': unexpected value "x" (...)
//   config field 'batch_size': must be >= 1
// The schema catches most mistakes; these cover configs built without the host (tests,
// embedding) and the rules a schema cannot say (one field must divide another, ...).
#ifndef MLH_CONFIG_FIELDS_HPP
#define MLH_CONFIG_FIELDS_HPP

#include <string>

#include <nlohmann/json.hpp>

#include "plugin.hpp"

namespace mlh {

// The value of `j[key]`, whose dotted path is `path`; missing or of the wrong type throws
// mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming the path.
template <class T>
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
