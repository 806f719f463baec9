#include "plugins/discovery.hpp"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <sstream>
#include <system_error>

#include <mlh/mlh_abi.h>

#include "common/errors.hpp"
#include "plugins/file_checks.hpp"
#include "plugins/manifest_notes.hpp"
#include "plugins/sha256.hpp"

namespace mlhost {
namespace fs = std::filesystem;

namespace {

constexpr const char* kManifestSuffix = ".plugin.json";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Why a manifest's library is missing: in a CMake build folder (a CMakeCache.txt a few levels
// up), a plugin not built yet, since a build can make the manifests of targets it did not build
// (the demo builds only protonet); elsewhere, a library removed from its folder.
std::string missing_library(const fs::path& library, const fs::path& manifest_dir) {
  std::error_code ec;
  fs::path dir = manifest_dir;
  for (int up = 0; up < 5 && !dir.empty(); ++up, dir = dir.parent_path()) {
    if (fs::exists(dir / "CMakeCache.txt", ec))
      return "not built: its library '" + library.filename().string() + "' is not in the build folder '" +
             dir.string() + "' yet; 'bash scripts/build.sh' (or 'cmake --build " + dir.string() +
             "') builds every plugin";
    if (dir == dir.parent_path()) break;
  }
  return "library '" + library.string() + "' named by the manifest is missing";
}

// Applies a safety finding: refuse, or (with --allow-unsafe-plugins) warn.
void apply_problem(const std::optional<std::string>& problem, const char* fix, bool allow_unsafe,
                   DiscoveredPlugin& plugin) {
  if (plugin.refused || !problem) return;
  if (allow_unsafe)
    plugin.warnings.push_back(*problem + " (allowed by --allow-unsafe-plugins)");
  else
    plugin.refused = *problem + "; fix with '" + fix + "' or pass --allow-unsafe-plugins";
}

// The permission and ownership rules for one path (file or folder).
void check_permissions(const fs::path& path, bool allow_unsafe, DiscoveredPlugin& plugin) {
  apply_problem(check_not_writable_by_others(path), "chmod go-w", allow_unsafe, plugin);
  apply_problem(check_owner(path), "chown", allow_unsafe, plugin);
}

void scan_dir(const SearchDir& dir, const DiscoveryOptions& options, Discovery& out) {
  std::error_code ec;
  if (!fs::is_directory(dir.path, ec)) {
    out.problems.push_back({dir.path, "plugin folder (" + dir.origin + ") does not exist or is not a folder"});
    return;
  }
  std::vector<fs::path> manifests;
  for (fs::directory_iterator it(dir.path, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string file = it->path().filename().string();
    if (ends_with(file, kManifestSuffix)) manifests.push_back(it->path());
  }
  if (ec) {
    out.problems.push_back({dir.path, "cannot list plugin folder: " + ec.message()});
    return;
  }
  std::sort(manifests.begin(), manifests.end());  // deterministic order within a folder

  const auto dir_problem = check_not_writable_by_others(dir.path);
  const auto dir_owner_problem = check_owner(dir.path);
  for (const fs::path& path : manifests) {
    DiscoveredPlugin plugin;
    plugin.origin = dir.origin;
    try {
      plugin.manifest = read_manifest(path);
    } catch (const ManifestError& e) {
      out.problems.push_back({path, e.what()});
      continue;
    }
    const PluginManifest& m = plugin.manifest;
    const std::string stem = path.filename().string().substr(0, path.filename().string().size() - std::char_traits<char>::length(kManifestSuffix));
    if (stem != m.name)
      plugin.refused = "manifest file is named '" + stem + kManifestSuffix + "' but its field 'name' is '" +
                       m.name + "'";
    if (!plugin.refused) {
      if (const DiscoveredPlugin* first = out.find_any(m.kind, m.name))
        plugin.refused = "duplicate " + m.kind + " plugin name '" + m.name + "': shadowed by '" +
                         first->manifest.manifest_path.string() + "' (earlier in the search path)";
    }
    if (!plugin.refused && m.abi_major != MLH_ABI_VERSION_MAJOR)
      plugin.refused = "built for ABI " + std::to_string(m.abi_major) + "." + std::to_string(m.abi_minor) +
                       ", this host speaks ABI " + std::to_string(MLH_ABI_VERSION_MAJOR) + ".x";
    if (!plugin.refused && !fs::is_regular_file(m.library_path, ec))
      plugin.refused = missing_library(m.library_path, path.parent_path());
    if (!plugin.refused) {
      if (auto elf = check_elf_library(m.library_path)) plugin.refused = *elf;
    }
    if (!plugin.refused && !m.build_arch.empty() && m.build_arch != host_architecture())
      plugin.refused = "manifest says built for " + m.build_arch + ", this host is " + host_architecture();
    // Code loads only from the search path: a library that is a symbolic link out of its
    // folder is refused whatever the flags say.
    if (!plugin.refused) {
      if (auto link = check_link_stays_in(m.library_path, dir.path)) plugin.refused = *link;
    }
    apply_problem(dir_problem, "chmod go-w", options.allow_unsafe, plugin);
    apply_problem(dir_owner_problem, "chown", options.allow_unsafe, plugin);
    check_permissions(path, options.allow_unsafe, plugin);
    check_permissions(m.library_path, options.allow_unsafe, plugin);
    // The allow-list last: hashing reads the whole library, so only plugins that passed
    // everything else and that the allow-list names are hashed.
    if (!plugin.refused && options.allowlist && !options.allowlist->lists(m.name)) {
      plugin.refused = options.allowlist->not_listed(m.name, m.library_path);
    } else if (!plugin.refused && options.allowlist) {
      try {
        plugin.sha256 = sha256_file(m.library_path);
        const std::string why = options.allowlist->refusal(m.name, *plugin.sha256);
        if (!why.empty()) plugin.refused = why;
      } catch (const std::exception& e) {
        plugin.refused = std::string("cannot hash the library for the plugin allow-list: ") + e.what();
      }
    }
    if (!plugin.refused)
      for (std::string& note : manifest_notes(m)) plugin.warnings.push_back(std::move(note));
    out.plugins.push_back(std::move(plugin));
  }
}

}  // namespace

const DiscoveredPlugin* Discovery::find_usable(const std::string& kind, const std::string& name) const {
  for (const auto& p : plugins)
    if (p.usable() && p.manifest.kind == kind && p.manifest.name == name) return &p;
  return nullptr;
}

const DiscoveredPlugin* Discovery::find_any(const std::string& kind, const std::string& name) const {
  for (const auto& p : plugins)
    if (p.manifest.kind == kind && p.manifest.name == name) return &p;
  return nullptr;
}

std::vector<PluginManifest> Discovery::usable(const std::string& kind) const {
  std::vector<PluginManifest> out;
  for (const auto& p : plugins)
    if (p.usable() && p.manifest.kind == kind) out.push_back(p.manifest);
  return out;
}

const DiscoveredPlugin& Discovery::usable_algorithm(const std::string& name) const {
  if (const DiscoveredPlugin* p = find_usable("algorithm", name)) return *p;
  if (const DiscoveredPlugin* p = find_any("algorithm", name))
    throw HostError("algorithm plugin '" + name + "' cannot be loaded: " + *p->refused);
  std::string known;
  for (const PluginManifest& m : usable("algorithm")) known += (known.empty() ? "" : ", ") + m.name;
  throw HostError("no algorithm plugin named '" + name + "' (found: " + (known.empty() ? "none" : known) +
                      "); see 'host --list-plugins'",
                  kExitBadInput);
}

const DiscoveredPlugin& Discovery::usable_device_plugin(const std::string& name) const {
  if (const DiscoveredPlugin* p = find_usable("device", name)) return *p;
  throw HostError("device plugin '" + name + "' vanished after probing");
}

fs::path install_root() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  buf[n] = '\0';
  return fs::path(buf).parent_path().parent_path().lexically_normal();
}

fs::path default_plugin_dir() { return install_root() / "lib" / "mlhost" / "plugins"; }

fs::path default_share_dir() { return install_root() / "share" / "mlhost"; }

std::vector<SearchDir> build_search_path(const DiscoveryOptions& options) {
  std::vector<SearchDir> dirs;
  auto add = [&](const fs::path& p, const char* origin) {
    if (p.empty()) return;
    // "dir", "dir/" and "dir/." are one folder: normalise away the trailing separator.
    fs::path abs = fs::absolute(p).lexically_normal();
    if (!abs.has_filename() && abs.has_relative_path()) abs = abs.parent_path();
    for (const auto& d : dirs)
      if (d.path == abs) return;  // a folder given twice is searched once
    dirs.push_back({abs, origin});
  };
  for (const auto& d : options.plugin_dirs) add(d, "--plugin-dir");
  std::stringstream env(options.env_path);
  for (std::string item; std::getline(env, item, ':');) add(item, "MLH_PLUGIN_PATH");
  if (options.use_default_dir) add(options.default_dir, "default");
  return dirs;
}

Discovery discover_plugins(const DiscoveryOptions& options) {
  Discovery out;
  out.search_path = build_search_path(options);
  for (const auto& dir : out.search_path) scan_dir(dir, options, out);
  return out;
}

}  // namespace mlhost
