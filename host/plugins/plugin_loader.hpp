// Loading a plugin library (Boost.DLL) and negotiating its ABI version.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/dll/shared_library.hpp>
#include <mlh/mlh.h>

#include "plugins/manifest.hpp"

namespace mlhost {

// A plugin that cannot be used; the message is the reason shown to the user.
class PluginLoadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The ABI versions this host speaks, best first: one entry per major.
std::vector<mlh_abi_version> host_abi_versions();

// Checks a plugin's answer to negotiation against what the host offered and what its
// manifest says. Returns the reason to refuse it, or an empty string when it is fine.
std::string check_negotiation(const std::vector<mlh_abi_version>& offered, const mlh_negotiate_response& answer,
                              const PluginManifest& manifest);

// A loaded, negotiated plugin. Keeps the library loaded for as long as it lives.
class LoadedPlugin {
 public:
  const PluginManifest& manifest() const { return manifest_; }
  uint32_t abi_major() const { return response_.abi_major; }
  uint32_t abi_minor() const { return response_.abi_minor; }
  // Non-null for the kind the manifest declares (checked at load).
  const mlh_device_plugin* device_table() const;
  const mlh_algorithm_plugin* algorithm_table() const;

 private:
  friend LoadedPlugin load_plugin(const PluginManifest& manifest);
  PluginManifest manifest_;
  std::shared_ptr<boost::dll::shared_library> library_;
  mlh_negotiate_response response_{};
};

// Loads, negotiates and validates the function table. Throws PluginLoadError.
LoadedPlugin load_plugin(const PluginManifest& manifest);

// Owns a plugin instance made by a table's create(); destroys it on scope exit.
template <class Table>
class PluginInstance {
 public:
  PluginInstance(const Table* table, const std::string& plugin_name) : table_(table) {
    mlh_error err{sizeof(mlh_error), MLH_OK, {0}};
    if (table_->create(&instance_, &err) != MLH_OK || instance_ == nullptr)
      throw PluginLoadError("plugin '" + plugin_name + "' failed to start: " +
                            (err.message[0] ? std::string(err.message) : "create returned no instance"));
  }
  ~PluginInstance() {
    if (instance_) table_->destroy(instance_);
  }
  PluginInstance(const PluginInstance&) = delete;
  PluginInstance& operator=(const PluginInstance&) = delete;
  mlh_plugin_instance* get() const { return instance_; }

 private:
  const Table* table_;
  mlh_plugin_instance* instance_ = nullptr;
};

// A fresh error value for an ABI call.
inline mlh_error make_error() {
  mlh_error e{};
  e.struct_size = sizeof(mlh_error);
  return e;
}

// "<status name>: <message>" for an error a plugin returned.
std::string describe_error(mlh_status status, const mlh_error& error);

}  // namespace mlhost
