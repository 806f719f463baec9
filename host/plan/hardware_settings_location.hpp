// Which hardware settings file a run reads. Named: --hardware-config FILE, else the
// MLH_HARDWARE_CONFIG variable (a named file must exist). Otherwise the first that exists of
// the places users keep settings, most specific first:
//   ./mlhost.ini                                   this project's folder (the current folder)
//   $XDG_CONFIG_HOME/mlhost/hardware.ini           this user (default ~/.config/mlhost/...)
//   /etc/mlhost/hardware.ini                       this machine
// --no-hardware-config reads none. The plan names the file and why it was that one.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace mlhost {

// Where to look; the defaults are this process's (tests pass their own).
struct SettingsSearch {
  std::filesystem::path current_dir;     // "": the current folder
  std::optional<std::string> xdg_config_home;  // $XDG_CONFIG_HOME (unset or empty: $HOME/.config)
  std::optional<std::string> home;             // $HOME
  std::filesystem::path system_dir = "/etc/mlhost";

  static SettingsSearch from_environment();
};

struct SettingsFileChoice {
  std::optional<std::filesystem::path> file;  // none: no settings file
  std::string status;                         // "FILE (found in the current folder)", "none: ..."
};

// `named`: --hardware-config's value ("" when not given); `env`: MLH_HARDWARE_CONFIG (null or
// "" when unset); `none`: --no-hardware-config.
SettingsFileChoice choose_settings_file(const std::filesystem::path& named, const char* env, bool none,
                                        const SettingsSearch& search);

}  // namespace mlhost
