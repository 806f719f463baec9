// Which hardware settings file a run reads (plan/settings_file.hpp): named first, then the
// places users keep settings, most specific first.
#include "plan/hardware_settings_location.hpp"

#include <gtest/gtest.h>

#include "test_files.hpp"

namespace mlhost {
namespace {

namespace fs = std::filesystem;

void touch(const fs::path& file) { testing::write_text(file, "# settings\n"); }

class HardwareSettingsLocation : public ::testing::Test {
 protected:
  SettingsSearch search() const {
    SettingsSearch s;
    s.current_dir = dir_.path() / "project";
    s.home = (dir_.path() / "home").string();
    s.system_dir = dir_.path() / "etc" / "mlhost";
    return s;
  }
  fs::path project_file() const { return dir_.path() / "project" / "mlhost.ini"; }
  fs::path user_file() const { return dir_.path() / "home" / ".config" / "mlhost" / "hardware.ini"; }
  fs::path system_file() const { return dir_.path() / "etc" / "mlhost" / "hardware.ini"; }

  TempDir dir_;
};

TEST_F(HardwareSettingsLocation, TheProjectsFileThenTheUsersThenTheMachines) {
  SettingsFileChoice c = choose_settings_file("", nullptr, false, search());
  EXPECT_FALSE(c.file);
  EXPECT_EQ(c.status.rfind("none (no --hardware-config or MLH_HARDWARE_CONFIG, and none of ", 0), 0u) << c.status;
  EXPECT_NE(c.status.find(system_file().string()), std::string::npos) << c.status;

  touch(system_file());
  c = choose_settings_file("", nullptr, false, search());
  EXPECT_EQ(c.file, system_file());
  EXPECT_EQ(c.status, system_file().string() + " (found in " + system_file().parent_path().string() + ")");

  touch(user_file());
  c = choose_settings_file("", nullptr, false, search());
  EXPECT_EQ(c.file, user_file());
  EXPECT_EQ(c.status, user_file().string() + " (found in ~/.config/mlhost)");

  touch(project_file());
  c = choose_settings_file("", nullptr, false, search());
  EXPECT_EQ(c.file, project_file());
  EXPECT_EQ(c.status, project_file().string() + " (found in the current folder)");
}

TEST_F(HardwareSettingsLocation, XdgConfigHomeReplacesTheHomeFolderUnlessEmpty) {
  SettingsSearch s = search();
  s.xdg_config_home = (dir_.path() / "xdg").string();
  touch(user_file());
  EXPECT_FALSE(choose_settings_file("", nullptr, false, s).file) << "~/.config is not looked at with XDG_CONFIG_HOME set";
  touch(dir_.path() / "xdg" / "mlhost" / "hardware.ini");
  EXPECT_EQ(choose_settings_file("", nullptr, false, s).file, dir_.path() / "xdg" / "mlhost" / "hardware.ini");
  s.xdg_config_home = "";
  EXPECT_EQ(choose_settings_file("", nullptr, false, s).file, user_file());
}

TEST_F(HardwareSettingsLocation, ANamedFileWinsAndNoneReadsNothing) {
  touch(project_file());
  SettingsFileChoice c = choose_settings_file("/x/named.ini", "/y/env.ini", false, search());
  EXPECT_EQ(c.file, fs::path("/x/named.ini"));
  EXPECT_EQ(c.status, "/x/named.ini (--hardware-config)");
  c = choose_settings_file("", "/y/env.ini", false, search());
  EXPECT_EQ(c.file, fs::path("/y/env.ini"));
  EXPECT_EQ(c.status, "/y/env.ini (MLH_HARDWARE_CONFIG)");
  EXPECT_EQ(choose_settings_file("", "", false, search()).file, project_file()) << "an empty variable is unset";
  c = choose_settings_file("", "/y/env.ini", true, search());
  EXPECT_FALSE(c.file);
  EXPECT_EQ(c.status, "none (--no-hardware-config)");
}

}  // namespace
}  // namespace mlhost
