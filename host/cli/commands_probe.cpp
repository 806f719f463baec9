// --probe and --list-plugins.
#include <chrono>
#include <cstdlib>
#include <iostream>

#include "cli/commands.hpp"
#include "probe/report.hpp"

namespace mlhost {

DiscoveryOptions discovery_options(const CliOptions& options) {
  DiscoveryOptions d;
  d.plugin_dirs = options.plugin_dirs;
  if (const char* env = std::getenv("MLH_PLUGIN_PATH")) d.env_path = env;
  d.use_default_dir = !options.no_default_plugin_dir;
  d.default_dir = default_plugin_dir();
  d.allow_unsafe = options.allow_unsafe_plugins;
  // The allow-list: --plugin-allowlist, else $MLH_PLUGIN_ALLOWLIST (empty: none).
  std::filesystem::path allowlist = options.plugin_allowlist;
  std::string allowlist_origin = "--plugin-allowlist";
  if (allowlist.empty()) {
    if (const char* env = std::getenv("MLH_PLUGIN_ALLOWLIST"); env && *env) {
      allowlist = env;
      allowlist_origin = "MLH_PLUGIN_ALLOWLIST";
    }
  }
  if (!allowlist.empty()) {
    try {
      d.allowlist = read_allowlist(allowlist);
      d.allowlist->origin = allowlist_origin;
    } catch (const AllowlistError& e) {
      throw HostError(std::string(e.what()) + " (" + allowlist_origin + ")", kExitBadInput);
    }
  }
  for (const auto& dir : options.plugin_dirs) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
      throw HostError("--plugin-dir '" + dir.string() + "': no such folder", kExitBadInput);
  }
  return d;
}

int command_probe(const CliOptions& options) {
  const Discovery discovery = discover_plugins(discovery_options(options));
  const ProbeReport report = probe_and_rank(discovery, discovery.usable("algorithm"), options.device, options.no_gpu,
                                            std::chrono::milliseconds(options.probe_timeout_ms));
  if (options.json)
    std::cout << probe_report_to_json(report).dump(2) << "\n";
  else
    std::cout << probe_report_to_text(report);
  return 0;  // the probe ran: plugin failures are in the report, not the exit status
}

int command_list_plugins(const CliOptions& options) {
  const Discovery discovery = discover_plugins(discovery_options(options));
  if (options.json)
    std::cout << plugin_list_to_json(discovery).dump(2) << "\n";
  else
    std::cout << plugin_list_to_text(discovery);
  return 0;
}

}  // namespace mlhost
