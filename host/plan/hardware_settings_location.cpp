#include "plan/hardware_settings_location.hpp"

#include <cstdlib>
#include <system_error>
#include <utility>
#include <vector>

namespace mlhost {

namespace fs = std::filesystem;

SettingsSearch SettingsSearch::from_environment() {
  SettingsSearch s;
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME")) s.xdg_config_home = xdg;
  if (const char* home = std::getenv("HOME")) s.home = home;
  return s;
}

SettingsFileChoice choose_settings_file(const fs::path& named, const char* env, bool none, const SettingsSearch& search) {
  if (none) return {std::nullopt, "none (--no-hardware-config)"};
  if (!named.empty()) return {named, named.string() + " (--hardware-config)"};
  if (env && *env) return {fs::path(env), std::string(env) + " (MLH_HARDWARE_CONFIG)"};

  std::vector<std::pair<fs::path, std::string>> places;
  places.emplace_back((search.current_dir.empty() ? fs::path(".") : search.current_dir) / "mlhost.ini",
                      "found in the current folder");
  // The XDG base directory rule: an unset or empty XDG_CONFIG_HOME means $HOME/.config.
  if (search.xdg_config_home && !search.xdg_config_home->empty())
    places.emplace_back(fs::path(*search.xdg_config_home) / "mlhost" / "hardware.ini", "found in $XDG_CONFIG_HOME/mlhost");
  else if (search.home && !search.home->empty())
    places.emplace_back(fs::path(*search.home) / ".config" / "mlhost" / "hardware.ini", "found in ~/.config/mlhost");
  places.emplace_back(search.system_dir / "hardware.ini", "found in " + search.system_dir.string());

  std::string looked;
  for (const auto& [file, why] : places) {
    std::error_code ec;
    if (fs::is_regular_file(file, ec)) return {file, file.string() + " (" + why + ")"};
    looked += (looked.empty() ? "" : ", ") + file.string();
  }
  return {std::nullopt, "none (no --hardware-config or MLH_HARDWARE_CONFIG, and none of " + looked + ")"};
}

}  // namespace mlhost
