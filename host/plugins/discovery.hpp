// Plugin discovery: find manifests in the search path and decide, without loading any
// code, which plugins may be loaded.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "plugins/allowlist.hpp"
#include "plugins/manifest.hpp"

namespace mlhost {

struct DiscoveryOptions {
  std::vector<std::filesystem::path> plugin_dirs;  // --plugin-dir, in the order given
  std::string env_path;                            // MLH_PLUGIN_PATH (colon-separated)
  bool use_default_dir = true;                     // false with --no-default-plugin-dir
  std::filesystem::path default_dir;               // <host>/../lib/mlhost/plugins
  bool allow_unsafe = false;                       // --allow-unsafe-plugins
  // --plugin-allowlist / $MLH_PLUGIN_ALLOWLIST: when set, only the libraries it pins load.
  std::optional<PluginAllowlist> allowlist;
};

struct SearchDir {
  std::filesystem::path path;
  std::string origin;  // "--plugin-dir", "MLH_PLUGIN_PATH" or "default"
};

struct DiscoveredPlugin {
  PluginManifest manifest;
  std::string origin;                  // which search dir it came from
  std::optional<std::string> refused;  // why it must not be loaded; nothing when loadable
  std::vector<std::string> warnings;   // e.g. unsafe permissions allowed by flag
  // The library's SHA-256 (lower-case hex). Computed only with an allow-list that names the
  // plugin (hashing costs time), and only once it passed every other check.
  std::optional<std::string> sha256;
  bool usable() const { return !refused.has_value(); }
};

// A file in a plugin folder that is not a readable manifest (so no plugin name to report).
struct DiscoveryProblem {
  std::filesystem::path path;
  std::string reason;
};

struct Discovery {
  std::vector<SearchDir> search_path;
  std::vector<DiscoveredPlugin> plugins;  // in search-path order, refused ones included
  std::vector<DiscoveryProblem> problems;

  // The loadable plugin of that kind and name (the first in search order), if any.
  const DiscoveredPlugin* find_usable(const std::string& kind, const std::string& name) const;
  // Any plugin of that kind and name, loadable or not (for explaining refusals).
  const DiscoveredPlugin* find_any(const std::string& kind, const std::string& name) const;

  // The manifests of every loadable plugin of that kind, in search order.
  std::vector<PluginManifest> usable(const std::string& kind) const;
  // The loadable algorithm plugin `name`, or a HostError that says why not (exit status 2
  // when there is none of that name, naming those there are).
  const DiscoveredPlugin& usable_algorithm(const std::string& name) const;
  // The loadable device plugin that reported a device (probing found it), or a HostError.
  const DiscoveredPlugin& usable_device_plugin(const std::string& name) const;
};

// The prefix the host runs from: the folder above its executable's (build/ or /usr/local).
std::filesystem::path install_root();
// The folder the host's own plugins live in: <prefix>/lib/mlhost/plugins.
std::filesystem::path default_plugin_dir();
// The host's data files (rules, default settings): <prefix>/share/mlhost.
std::filesystem::path default_share_dir();

// Search order: --plugin-dir entries, then MLH_PLUGIN_PATH entries, then the default
// folder. The first plugin of a given kind and name wins; later ones are reported as
// shadowed.
std::vector<SearchDir> build_search_path(const DiscoveryOptions& options);

Discovery discover_plugins(const DiscoveryOptions& options);

}  // namespace mlhost
