// --list-plugins and the plugin search path, and what discovery refuses: unsafe
// permissions, missing libraries, unreadable manifests.
#include <sys/stat.h>
#include <unistd.h>

#include <set>

#include <mlh/mlh_abi.h>

#include "cli_harness.hpp"

namespace mlhost::cli_test {
namespace {

std::vector<std::string> origins(const json& search_path) {
  std::vector<std::string> out;
  for (const json& d : search_path) out.push_back(str(d["origin"]));
  return out;
}

std::vector<fs::path> paths(const json& search_path) {
  std::vector<fs::path> out;
  for (const json& d : search_path) out.push_back(fs::path(str(d["path"])).lexically_normal());
  return out;
}

const json* find_listed(const json& list, const std::string& name) { return find_plugin(list, name); }

std::set<long> marker_pids(const fs::path& file) {
  std::set<long> out;
  for (const auto& line : read_lines(file))
    if (!line.empty()) out.insert(std::stol(line));
  return out;
}

// --- listing -------------------------------------------------------------------------------

using ListTest = CliTest;

TEST_F(ListTest, ListsManifestsWithoutLoadingCode) {
  REQUIRE_CASE("crash");
  REQUIRE_CASE("hang");
  ASSERT_TRUE(fs::exists(marker_plugin_dir() / "climarker.plugin.json")) << marker_plugin_dir();
  RunOptions o;
  o.env["MLH_CLI_MARKER_FILE"] = (tmp() / "marker.txt").string();
  const Result r = host({"--list-plugins", "--json", "--plugin-dir", case_dir("crash").string(), "--plugin-dir",
                         case_dir("hang").string(), "--plugin-dir", marker_plugin_dir().string()},
                        o);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_LT(r.elapsed_ms, 2000) << "listing reads manifests only; it should be quick";
  const json list = stdout_json(r);
  ASSERT_FALSE(list.is_discarded());
  EXPECT_EQ(list.value("schema_version", 0), 1);

  for (const char* name : {"crash", "hang", "climarker", "cpu"}) {
    const json* p = find_listed(list, name);
    ASSERT_NE(p, nullptr) << name << " not listed: " << list.dump(2);
    EXPECT_EQ((*p)["loadable"], true) << p->dump(2);
    EXPECT_TRUE((*p)["refused"].is_null()) << p->dump(2);
    EXPECT_EQ((*p)["kind"], "device");
    EXPECT_EQ((*p)["abi"], "1." + std::to_string(MLH_ABI_VERSION_MINOR)) << "built with this SDK's headers";
  }
  EXPECT_EQ((*find_listed(list, "crash"))["origin"], "--plugin-dir");
  EXPECT_EQ((*find_listed(list, "cpu"))["origin"], "default");
  EXPECT_FALSE(fs::exists(tmp() / "marker.txt")) << "--list-plugins loaded plugin code (the marker plugin ran)";

  // The probe, by contrast, loads it, and only in child processes, never in the host.
  o.cwd = tmp();
  Process p({host_path().string(), "--probe", "--json", "--plugin-dir", marker_plugin_dir().string()}, o);
  const pid_t host_pid = p.pid();
  const Result pr = p.wait(Millis(60000));
  ASSERT_EQ(pr.exit_code, 0) << pr.describe();
  const std::set<long> loaders = marker_pids(tmp() / "marker.txt");
  EXPECT_FALSE(loaders.empty()) << "the probe never loaded the marker plugin";
  EXPECT_EQ(loaders.count(host_pid), 0u) << "the host process itself loaded plugin code";
  const json report = stdout_json(pr);
  ASSERT_FALSE(report.is_discarded());
  const json* marker = find_plugin(report, "climarker");
  ASSERT_NE(marker, nullptr);
  EXPECT_EQ((*marker)["status"], "ok") << marker->dump(2);
  EXPECT_NE(find_device(report, "climarker:0"), nullptr);
  EXPECT_EQ(report["chosen"], "cpu:0") << "an 'other' class device never outranks the CPU";
}

TEST_F(ListTest, TextListing) {
  const Result r = host({"--list-plugins"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "Plugin search path")) << r.describe();
  EXPECT_TRUE(contains(r.out, "Device plugins")) << r.describe();
  EXPECT_TRUE(contains(r.out, "  cpu ")) << r.describe();
  EXPECT_TRUE(contains(r.out, default_plugin_dir().string())) << r.describe();
}

TEST_F(ListTest, PluginPathAddsFoldersAfterPluginDir) {
  REQUIRE_CASE("cgood");
  REQUIRE_CASE("slow-good");
  RunOptions o;
  o.env["MLH_PLUGIN_PATH"] = case_dir("cgood").string() + ":" + case_dir("slow-good").string();
  const json list = list_plugins({"--plugin-dir", marker_plugin_dir().string()}, o);
  ASSERT_FALSE(list.is_discarded());
  EXPECT_EQ(origins(list["search_path"]),
            (std::vector<std::string>{"--plugin-dir", "MLH_PLUGIN_PATH", "MLH_PLUGIN_PATH", "default"}))
      << list["search_path"].dump(2);
  EXPECT_EQ(paths(list["search_path"]),
            (std::vector<fs::path>{marker_plugin_dir().lexically_normal(), case_dir("cgood").lexically_normal(),
                                   case_dir("slow-good").lexically_normal(), default_plugin_dir()}));
  const json* cgood = find_listed(list, "cgood");
  ASSERT_NE(cgood, nullptr) << list.dump(2);
  EXPECT_EQ((*cgood)["origin"], "MLH_PLUGIN_PATH");
  EXPECT_EQ((*cgood)["loadable"], true);
  const json* slow = find_listed(list, manifest_name(case_dir("slow-good")));
  ASSERT_NE(slow, nullptr) << list.dump(2);
  EXPECT_EQ((*slow)["origin"], "MLH_PLUGIN_PATH");

  // Without MLH_PLUGIN_PATH they are gone.
  const json plain = list_plugins({"--plugin-dir", marker_plugin_dir().string()});
  ASSERT_FALSE(plain.is_discarded());
  EXPECT_EQ(find_listed(plain, "cgood"), nullptr);
  EXPECT_EQ(origins(plain["search_path"]), (std::vector<std::string>{"--plugin-dir", "default"}));
}

TEST_F(ListTest, MissingFolderInPluginPathIsAProblemNotAnError) {
  RunOptions o;
  o.env["MLH_PLUGIN_PATH"] = "/nonexistent/mlhost-plugins::" + marker_plugin_dir().string();
  const json list = list_plugins({}, o);
  ASSERT_FALSE(list.is_discarded());
  EXPECT_EQ(origins(list["search_path"]),
            (std::vector<std::string>{"MLH_PLUGIN_PATH", "MLH_PLUGIN_PATH", "default"}))
      << "an empty MLH_PLUGIN_PATH entry adds no folder: " << list["search_path"].dump(2);
  bool reported = false;
  for (const json& p : list["problems"])
    reported = reported || fs::path(str(p["path"])) == "/nonexistent/mlhost-plugins";
  EXPECT_TRUE(reported) << list["problems"].dump(2);
  EXPECT_NE(find_listed(list, "climarker"), nullptr);
}

TEST_F(ListTest, PluginDirWinsOverPluginPath) {
  REQUIRE_CASE("dup-cpu");
  // Two copies of the same "cpu" plugin: one by --plugin-dir, one by MLH_PLUGIN_PATH.
  const fs::path a = tmp() / "a", b = tmp() / "b";
  copy_plugin_dir(case_dir("dup-cpu"), a);
  copy_plugin_dir(case_dir("dup-cpu"), b);
  RunOptions o;
  o.env["MLH_PLUGIN_PATH"] = b.string();
  const json list = list_plugins({"--plugin-dir", a.string()}, o);
  ASSERT_FALSE(list.is_discarded());
  const json* from_a = find_plugin_by_dir(list, a);
  const json* from_b = find_plugin_by_dir(list, b);
  const json* real = find_plugin_by_dir(list, default_plugin_dir());
  ASSERT_TRUE(from_a && from_b && real) << list.dump(2);
  EXPECT_EQ((*from_a)["loadable"], true) << from_a->dump(2);
  EXPECT_EQ((*from_a)["origin"], "--plugin-dir");
  for (const json* loser : {from_b, real}) {
    EXPECT_EQ((*loser)["loadable"], false) << loser->dump(2);
    EXPECT_TRUE(contains(str((*loser)["refused"]), "shadowed")) << loser->dump(2);
    EXPECT_TRUE(contains(str((*loser)["refused"]), (a / "cpu.plugin.json").string())) << loser->dump(2);
  }
  // The listing keeps search order (a, b, then the default folder's cpu, cuda, mps).
  const std::vector<std::string> names = plugin_names_in(list);
  ASSERT_GE(names.size(), 3u) << list.dump(2);
  EXPECT_EQ(fs::path(str(list["plugins"][0]["library"])).parent_path(), a);
  EXPECT_EQ(fs::path(str(list["plugins"][1]["library"])).parent_path(), b);
}

TEST_F(ListTest, NoDefaultPluginDirRemovesTheCpuPlugin) {
  const json list = list_plugins({"--no-default-plugin-dir", "--plugin-dir", marker_plugin_dir().string()});
  ASSERT_FALSE(list.is_discarded());
  EXPECT_EQ(find_listed(list, "cpu"), nullptr) << list.dump(2);
  EXPECT_EQ(origins(list["search_path"]), std::vector<std::string>{"--plugin-dir"});

  const json empty = list_plugins({"--no-default-plugin-dir"});
  ASSERT_FALSE(empty.is_discarded());
  EXPECT_TRUE(empty["plugins"].empty()) << empty.dump(2);
  EXPECT_TRUE(empty["search_path"].empty()) << empty.dump(2);

  // Probing with no device plugin at all: a report that says so, not a failure.
  const json report = probe({"--no-default-plugin-dir"});
  ASSERT_FALSE(report.is_discarded());
  EXPECT_TRUE(report["chosen"].is_null()) << report.dump(2);
  EXPECT_TRUE(report["error"].is_string()) << report.dump(2);
  const json* cpu = find_plugin(report, "cpu");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ((*cpu)["status"], "not installed");
}

TEST_F(ListTest, AFolderGivenTwiceIsSearchedOnce) {
  // The same folder spelled differently ("dir/" as shell completion writes it, "dir/.")
  // is one folder: searched once, and its plugin not reported as shadowed by itself.
  for (const std::string& again : {marker_plugin_dir().string(), marker_plugin_dir().string() + "/",
                                   (marker_plugin_dir() / ".").string()}) {
    SCOPED_TRACE("--plugin-dir " + marker_plugin_dir().string() + " --plugin-dir " + again);
    const json list = list_plugins({"--plugin-dir", marker_plugin_dir().string(), "--plugin-dir", again});
    ASSERT_FALSE(list.is_discarded());
    int markers = 0;
    for (const std::string& n : plugin_names_in(list)) markers += n == "climarker";
    EXPECT_EQ(markers, 1) << list.dump(2);
    EXPECT_EQ(origins(list["search_path"]), (std::vector<std::string>{"--plugin-dir", "default"}))
        << list["search_path"].dump(2);
  }
}

// --- what discovery refuses ------------------------------------------------------------------

class PermissionTest : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    ASSERT_TRUE(fs::exists(marker_plugin_dir() / "climarker.plugin.json")) << marker_plugin_dir();
    dir_ = tmp() / "plugins";
    copy_plugin_dir(marker_plugin_dir(), dir_);
    manifest_ = dir_ / "climarker.plugin.json";
    library_ = dir_ / "libmlhost-climarker.so";
    ASSERT_TRUE(fs::exists(library_)) << library_;
  }

  const json* entry(const json& report) { return find_plugin(report, "climarker"); }

  // Listed and probed as refused with a reason containing `why` (and `path`).
  void expect_refused(const std::string& why, const fs::path& path) {
    const json list = list_plugins({"--plugin-dir", dir_.string()});
    ASSERT_FALSE(list.is_discarded());
    const json* p = entry(list);
    ASSERT_NE(p, nullptr) << list.dump(2);
    EXPECT_EQ((*p)["loadable"], false) << p->dump(2);
    EXPECT_TRUE(contains(str((*p)["refused"]), why)) << p->dump(2);
    EXPECT_TRUE(contains(str((*p)["refused"]), path.string())) << p->dump(2);

    const json report = probe({"--plugin-dir", dir_.string()});
    ASSERT_FALSE(report.is_discarded());
    const json* q = entry(report);
    ASSERT_NE(q, nullptr) << report.dump(2);
    EXPECT_EQ((*q)["status"], "refused") << q->dump(2);
    EXPECT_TRUE(contains(str((*q)["reason"]), why)) << q->dump(2);
    EXPECT_EQ(find_device(report, "climarker:0"), nullptr);
    EXPECT_EQ(report["chosen"], "cpu:0");
  }

  // With --allow-unsafe-plugins: loaded, with a warning.
  void expect_allowed_with_warning(const fs::path& path) {
    const json list = list_plugins({"--plugin-dir", dir_.string(), "--allow-unsafe-plugins"});
    ASSERT_FALSE(list.is_discarded());
    const json* p = entry(list);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ((*p)["loadable"], true) << p->dump(2);
    ASSERT_FALSE((*p)["warnings"].empty()) << p->dump(2);
    EXPECT_TRUE(contains((*p)["warnings"].dump(), "unsafe permissions")) << p->dump(2);
    EXPECT_TRUE(contains((*p)["warnings"].dump(), path.string())) << p->dump(2);

    const json report = probe({"--plugin-dir", dir_.string(), "--allow-unsafe-plugins"});
    ASSERT_FALSE(report.is_discarded());
    const json* q = entry(report);
    ASSERT_NE(q, nullptr);
    EXPECT_EQ((*q)["status"], "ok") << q->dump(2);
    EXPECT_TRUE(contains((*q)["warnings"].dump(), "unsafe permissions")) << q->dump(2);
    EXPECT_NE(find_device(report, "climarker:0"), nullptr);

    const Result text = host({"--probe", "--plugin-dir", dir_.string(), "--allow-unsafe-plugins"});
    EXPECT_EQ(text.exit_code, 0);
    EXPECT_TRUE(contains(text.out, "warning: unsafe permissions")) << text.describe();
  }

  fs::path dir_, manifest_, library_;
};

TEST_F(PermissionTest, SafeCopyLoads) {
  // The control: the copy itself is fine, so the refusals below come from the damage done.
  const json report = probe({"--plugin-dir", dir_.string()});
  ASSERT_FALSE(report.is_discarded());
  const json* p = entry(report);
  ASSERT_NE(p, nullptr) << report.dump(2);
  EXPECT_EQ((*p)["status"], "ok") << p->dump(2);
  EXPECT_TRUE((*p)["warnings"].empty()) << p->dump(2);
}

TEST_F(PermissionTest, WorldWritableLibraryIsRefused) {
  ASSERT_EQ(::chmod(library_.c_str(), 0666), 0);
  expect_refused("unsafe permissions", library_);
  expect_allowed_with_warning(library_);
}

TEST_F(PermissionTest, GroupWritableLibraryIsRefused) {
  ASSERT_EQ(::chmod(library_.c_str(), 0775), 0);
  expect_refused("unsafe permissions", library_);
}

TEST_F(PermissionTest, WorldWritableFolderIsRefused) {
  ASSERT_EQ(::chmod(dir_.c_str(), 0777), 0);
  expect_refused("unsafe permissions", dir_);
  expect_allowed_with_warning(dir_);
}

TEST_F(PermissionTest, WorldWritableManifestIsRefused) {
  ASSERT_EQ(::chmod(manifest_.c_str(), 0666), 0);
  expect_refused("unsafe permissions", manifest_);
}

TEST_F(PermissionTest, MissingLibraryIsRefused) {
  fs::remove(library_);
  expect_refused("missing", library_);
}

// In a build folder a manifest can be there before its library (the demo builds only what it
// runs): the plugin is "not built", and the message says how to build it.
TEST_F(PermissionTest, AManifestWithoutItsLibraryInABuildFolderIsNotBuiltYet) {
  const fs::path build = tmp() / "build";
  const fs::path plugins = build / "lib" / "mlhost" / "plugins";
  copy_plugin_dir(marker_plugin_dir(), plugins);
  write_file(build / "CMakeCache.txt", "# a CMake build folder\n");
  fs::remove(plugins / library_.filename());
  const json list = list_plugins({"--plugin-dir", plugins.string()});
  ASSERT_FALSE(list.is_discarded());
  const json* p = entry(list);
  ASSERT_NE(p, nullptr) << list.dump(2);
  EXPECT_EQ((*p)["loadable"], false) << p->dump(2);
  EXPECT_TRUE(contains(str((*p)["refused"]), "not built")) << p->dump(2);
  EXPECT_TRUE(contains(str((*p)["refused"]), "bash scripts/build.sh")) << p->dump(2);
  EXPECT_TRUE(contains(str((*p)["refused"]), "cmake --build " + build.string())) << p->dump(2);
}

TEST_F(PermissionTest, InvalidJsonManifestIsAProblem) {
  const fs::path bad = dir_ / "broken.plugin.json";
  write_file(bad, "{ \"manifest_version\": 1, \"kind\": \"device\", oops }\n");
  for (const bool as_probe : {false, true}) {
    const json out = as_probe ? probe({"--plugin-dir", dir_.string()}) : list_plugins({"--plugin-dir", dir_.string()});
    ASSERT_FALSE(out.is_discarded());
    ASSERT_TRUE(out.contains("problems")) << out.dump(2);
    const json* problem = nullptr;
    for (const json& p : out["problems"])
      if (fs::path(str(p["path"])) == bad) problem = &p;
    ASSERT_NE(problem, nullptr) << "the bad manifest is not in problems: " << out["problems"].dump(2);
    EXPECT_TRUE(contains(str((*problem)["reason"]), "invalid JSON")) << problem->dump(2);
    EXPECT_TRUE(contains(str((*problem)["reason"]), bad.string())) << problem->dump(2);
    // The good plugin beside it is unaffected.
    const json* good = entry(out);
    ASSERT_NE(good, nullptr) << out.dump(2);
    if (as_probe)
      EXPECT_EQ((*good)["status"], "ok");
    else
      EXPECT_EQ((*good)["loadable"], true);
  }
  const Result text = host({"--list-plugins", "--plugin-dir", dir_.string()});
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_TRUE(contains(text.out, "Problems")) << text.describe();
  EXPECT_TRUE(contains(text.out, bad.string())) << text.describe();
}

TEST_F(PermissionTest, ManifestWithoutNameIsAProblemNamingTheField) {
  json m = json::parse(read_file(manifest_));
  m.erase("name");
  const fs::path nameless = dir_ / "nameless.plugin.json";
  write_file(nameless, m.dump(2));
  const json list = list_plugins({"--plugin-dir", dir_.string()});
  ASSERT_FALSE(list.is_discarded());
  const json* problem = nullptr;
  for (const json& p : list["problems"])
    if (fs::path(str(p["path"])) == nameless) problem = &p;
  ASSERT_NE(problem, nullptr) << list.dump(2);
  EXPECT_TRUE(contains(str((*problem)["reason"]), "'name'")) << problem->dump(2);
  EXPECT_TRUE(contains(str((*problem)["reason"]), "missing")) << problem->dump(2);
}

TEST_F(PermissionTest, ManifestFileNameMustMatchItsName) {
  fs::rename(manifest_, dir_ / "other.plugin.json");
  const json list = list_plugins({"--plugin-dir", dir_.string()});
  ASSERT_FALSE(list.is_discarded());
  const json* p = entry(list);
  ASSERT_NE(p, nullptr) << list.dump(2);
  EXPECT_EQ((*p)["loadable"], false);
  EXPECT_TRUE(contains(str((*p)["refused"]), "other.plugin.json")) << p->dump(2);
}

TEST_F(PermissionTest, ManifestCannotPointOutsideItsFolder) {
  json m = json::parse(read_file(manifest_));
  m["library"] = "../elsewhere/libmlhost-climarker.so";
  write_file(manifest_, m.dump(2));
  const json list = list_plugins({"--plugin-dir", dir_.string()});
  ASSERT_FALSE(list.is_discarded());
  EXPECT_EQ(entry(list), nullptr) << list.dump(2);
  ASSERT_EQ(list["problems"].size(), 1u) << list.dump(2);
  EXPECT_TRUE(contains(str(list["problems"][0]["reason"]), "'library'")) << list.dump(2);
}

}  // namespace
}  // namespace mlhost::cli_test
