#include "plugins/manifest_notes.hpp"

#include <algorithm>

#include <mlh/mlh_abi.h>

namespace mlhost {

namespace {

std::string version_text(uint32_t major, uint32_t minor) { return std::to_string(major) + "." + std::to_string(minor); }

// CMake's optimized configurations; another name is a project's own, which we cannot judge.
bool is_unoptimized_build_type(const std::string& build_type) {
  return build_type.empty() || build_type == "Debug";
}

}  // namespace

std::vector<std::string> manifest_notes(const PluginManifest& m) {
  std::vector<std::string> notes;
  if (m.abi_major == MLH_ABI_VERSION_MAJOR && m.abi_minor > MLH_ABI_VERSION_MINOR)
    notes.push_back("its manifest says ABI " + version_text(m.abi_major, m.abi_minor) + ", newer than this host's " +
                    version_text(MLH_ABI_VERSION_MAJOR, MLH_ABI_VERSION_MINOR) +
                    ": it loads only if its code also speaks " + promised_abi(m) +
                    (m.kind == "algorithm" ? " (--describe " + m.name + " shows the version it negotiates)"
                                           : std::string(" (--probe shows the version it negotiates)")));
  const auto build_type = m.build.find("build_type");
  if (build_type != m.build.end() && build_type->is_string() && is_unoptimized_build_type(build_type->get<std::string>()))
    notes.push_back("built without optimization (build_type '" + build_type->get<std::string>() +
                    "'): it may run several times slower; rebuild with -DCMAKE_BUILD_TYPE=Release");
  return notes;
}

std::string promised_abi(const PluginManifest& m) {
  return version_text(m.abi_major, std::min<uint32_t>(m.abi_minor, MLH_ABI_VERSION_MINOR));
}

std::optional<std::string> negotiated_abi_mismatch(const PluginManifest& m, const std::string& negotiated) {
  if (negotiated == promised_abi(m)) return std::nullopt;
  return "its code negotiated ABI " + negotiated + " but its manifest says " + version_text(m.abi_major, m.abi_minor) +
         " (so " + promised_abi(m) + " with this host): the manifest does not describe this library; rebuild the plugin "
         "so that both come from one SDK";
}

}  // namespace mlhost
