#include "plugins/discovery.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "plugins/file_checks.hpp"
#include "test_files.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace mlhost {
namespace {

namespace fs = std::filesystem;
using testing::manifest_text;
using testing::write_text;

// A folder holding a copy of the real CPU plugin under `name`.
fs::path make_plugin_dir(const fs::path& dir, const std::string& name, int abi_major = 1, const std::string& arch = "") {
  fs::create_directories(dir);
  ::chmod(dir.c_str(), 0755);
  const std::string lib = "libmlhost-" + name + ".so";
  fs::copy_file(MLH_TEST_CPU_PLUGIN, dir / lib, fs::copy_options::overwrite_existing);
  ::chmod((dir / lib).c_str(), 0755);
  write_text(dir / (name + ".plugin.json"), manifest_text(name, lib, "device", abi_major, arch));
  ::chmod((dir / (name + ".plugin.json")).c_str(), 0644);
  return dir;
}

DiscoveryOptions only(std::vector<fs::path> dirs) {
  DiscoveryOptions o;
  o.plugin_dirs = std::move(dirs);
  o.use_default_dir = false;
  return o;
}

const DiscoveredPlugin* find(const Discovery& d, const std::string& name, const fs::path& dir) {
  for (const auto& p : d.plugins)
    if (p.manifest.name == name && p.manifest.manifest_path.parent_path() == dir) return &p;
  return nullptr;
}

TEST(Discovery, SearchOrderIsPluginDirThenEnvThenDefault) {
  DiscoveryOptions o;
  o.plugin_dirs = {"/a", "/b"};
  o.env_path = "/c::/d:/a";
  o.default_dir = "/default";
  std::vector<SearchDir> dirs = build_search_path(o);
  ASSERT_EQ(dirs.size(), 5u) << "empty entries are skipped, repeats searched once";
  EXPECT_EQ(dirs[0].path, "/a");
  EXPECT_EQ(dirs[0].origin, "--plugin-dir");
  EXPECT_EQ(dirs[1].path, "/b");
  EXPECT_EQ(dirs[2].path, "/c");
  EXPECT_EQ(dirs[2].origin, "MLH_PLUGIN_PATH");
  EXPECT_EQ(dirs[3].path, "/d");
  EXPECT_EQ(dirs[4].path, "/default");
  EXPECT_EQ(dirs[4].origin, "default");
  o.use_default_dir = false;
  EXPECT_EQ(build_search_path(o).size(), 4u);
}

TEST(Discovery, DefaultFolderIsBesideTheExecutable) {
  // The test binary is not the host, but the rule is the same: <exe>/../lib/mlhost/plugins.
  EXPECT_EQ(default_plugin_dir().filename(), "plugins");
  EXPECT_EQ(default_plugin_dir().parent_path().filename(), "mlhost");
}

TEST(Discovery, FindsAGoodPlugin) {
  TempDir t;
  make_plugin_dir(t / "p", "alpha");
  Discovery d = discover_plugins(only({t / "p"}));
  ASSERT_EQ(d.plugins.size(), 1u);
  EXPECT_TRUE(d.plugins[0].usable()) << d.plugins[0].refused.value_or("");
  EXPECT_TRUE(d.problems.empty());
  EXPECT_NE(d.find_usable("device", "alpha"), nullptr);
  EXPECT_EQ(d.find_usable("algorithm", "alpha"), nullptr);
}

TEST(Discovery, FirstOfTwoSameNamesWinsAndTheOtherIsShadowed) {
  TempDir t;
  make_plugin_dir(t / "first", "twin");
  make_plugin_dir(t / "second", "twin");
  Discovery d = discover_plugins(only({t / "first", t / "second"}));
  ASSERT_EQ(d.plugins.size(), 2u);
  const DiscoveredPlugin* first = find(d, "twin", t / "first");
  const DiscoveredPlugin* second = find(d, "twin", t / "second");
  ASSERT_TRUE(first && second);
  EXPECT_TRUE(first->usable());
  ASSERT_FALSE(second->usable());
  EXPECT_NE(second->refused->find("shadowed"), std::string::npos) << *second->refused;
  EXPECT_NE(second->refused->find((t / "first").string()), std::string::npos) << *second->refused;
  EXPECT_EQ(d.find_usable("device", "twin"), first);
}

TEST(Discovery, MissingLibraryAndBrokenManifests) {
  TempDir t;
  fs::create_directories(t / "p");
  write_text(t / "p" / "ghost.plugin.json", manifest_text("ghost", "libmlhost-ghost.so"));
  write_text(t / "p" / "garbage.plugin.json", "{ this is not json");
  write_text(t / "p" / "noname.plugin.json",
             R"({"manifest_version":1,"kind":"device","version":"1","abi":{"major":1,"minor":0},"library":"x.so"})");
  fs::create_symlink(t / "p" / "nowhere.json", t / "p" / "dangling.plugin.json");
  write_text(t / "p" / "other.plugin.json", manifest_text("notother", "libmlhost-other.so"));
  write_text(t / "p" / "README.txt", "not a manifest, ignored");
  Discovery d = discover_plugins(only({t / "p"}));

  const DiscoveredPlugin* ghost = d.find_any("device", "ghost");
  ASSERT_NE(ghost, nullptr);
  ASSERT_FALSE(ghost->usable());
  EXPECT_NE(ghost->refused->find("missing"), std::string::npos) << *ghost->refused;

  const DiscoveredPlugin* other = d.find_any("device", "notother");
  ASSERT_NE(other, nullptr);
  EXPECT_NE(other->refused.value_or("").find("named 'other.plugin.json'"), std::string::npos)
      << other->refused.value_or("");

  ASSERT_EQ(d.problems.size(), 3u);
  auto problem_for = [&](const std::string& file) -> std::string {
    for (const auto& p : d.problems)
      if (p.path.filename() == file) return p.reason;
    return "";
  };
  EXPECT_NE(problem_for("garbage.plugin.json").find("invalid JSON"), std::string::npos);
  EXPECT_NE(problem_for("noname.plugin.json").find("'name'"), std::string::npos);
  EXPECT_NE(problem_for("dangling.plugin.json").find("cannot be read"), std::string::npos);
}

TEST(Discovery, MissingFolderIsAProblemNotACrash) {
  DiscoveryOptions o = only({});
  o.env_path = "/nonexistent/mlhost-plugins";
  Discovery d = discover_plugins(o);
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_NE(d.problems[0].reason.find("does not exist"), std::string::npos);
}

TEST(Discovery, NotElfWrongArchAndWrongAbiAreRefusedWithoutLoading) {
  TempDir t;
  fs::create_directories(t / "p");
  ::chmod((t / "p").c_str(), 0755);
  write_text(t / "p" / "libmlhost-text.so", "this is a text file, not a library\n");
  write_text(t / "p" / "text.plugin.json", manifest_text("text", "libmlhost-text.so"));
  make_plugin_dir(t / "p", "future", /*abi_major=*/2);
  const std::string other_arch = host_architecture() == "aarch64" ? "x86_64" : "aarch64";
  make_plugin_dir(t / "p", "foreign", 1, other_arch);
  Discovery d = discover_plugins(only({t / "p"}));

  auto reason = [&](const std::string& name) { return d.find_any("device", name)->refused.value_or(""); };
  EXPECT_NE(reason("text").find("no ELF header"), std::string::npos) << reason("text");
  EXPECT_NE(reason("future").find("built for ABI 2." + std::to_string(MLH_ABI_VERSION_MINOR)), std::string::npos) << reason("future");
  EXPECT_NE(reason("foreign").find("built for " + other_arch), std::string::npos) << reason("foreign");
}

TEST(Discovery, UnsafePermissionsAreRefusedUnlessAllowed) {
  TempDir t;
  make_plugin_dir(t / "lib", "loose-lib");
  ::chmod((t / "lib" / "libmlhost-loose-lib.so").c_str(), 0777);
  make_plugin_dir(t / "manifest", "loose-manifest");
  ::chmod((t / "manifest" / "loose-manifest.plugin.json").c_str(), 0664);
  make_plugin_dir(t / "dir", "loose-dir");
  ::chmod((t / "dir").c_str(), 0777);

  Discovery d = discover_plugins(only({t / "lib", t / "manifest", t / "dir"}));
  for (const char* name : {"loose-lib", "loose-manifest", "loose-dir"}) {
    const DiscoveredPlugin* p = d.find_any("device", name);
    ASSERT_NE(p, nullptr) << name;
    ASSERT_FALSE(p->usable()) << name;
    EXPECT_NE(p->refused->find("unsafe permissions"), std::string::npos) << *p->refused;
    EXPECT_NE(p->refused->find("--allow-unsafe-plugins"), std::string::npos) << *p->refused;
  }
  EXPECT_NE(d.find_any("device", "loose-manifest")->refused->find("its group"), std::string::npos);

  DiscoveryOptions allow = only({t / "lib", t / "manifest", t / "dir"});
  allow.allow_unsafe = true;
  Discovery a = discover_plugins(allow);
  for (const char* name : {"loose-lib", "loose-manifest", "loose-dir"}) {
    const DiscoveredPlugin* p = a.find_any("device", name);
    ASSERT_TRUE(p && p->usable()) << name;
    ASSERT_FALSE(p->warnings.empty()) << name;
    EXPECT_NE(p->warnings[0].find("unsafe permissions"), std::string::npos);
  }
}

}  // namespace
}  // namespace mlhost
