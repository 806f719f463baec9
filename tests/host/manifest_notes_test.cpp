// What --list-plugins and --probe say about a usable plugin whose manifest disagrees with this
// host or with its own code: a newer ABI, a build without optimization, a negotiated version
// the manifest did not promise. The probe half loads the real CPU plugin (ABI 1.1) under
// manifests that say otherwise.
#include "plugins/manifest_notes.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <functional>

#include <mlh/mlh_abi.h>

#include "plugins/discovery.hpp"
#include "probe/probe.hpp"
#include "test_files.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace mlhost {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::write_text;

// The real CPU plugin's manifest with `edit` applied to it.
PluginManifest cpu_manifest(const std::function<void(json&)>& edit) {
  json m = json::parse(testing::read_text(MLH_TEST_CPU_MANIFEST));
  edit(m);
  return parse_manifest(m.dump(), MLH_TEST_CPU_MANIFEST);
}

bool any_contains(const std::vector<std::string>& lines, const std::string& part) {
  for (const auto& line : lines)
    if (line.find(part) != std::string::npos) return true;
  return false;
}

TEST(ManifestNotes, TheShippedCpuPluginHasNone) {
  const PluginManifest m = read_manifest(MLH_TEST_CPU_MANIFEST);
  EXPECT_TRUE(manifest_notes(m).empty()) << manifest_notes(m).front();
  EXPECT_EQ(negotiated_abi_mismatch(m, promised_abi(m)), std::nullopt);
}

TEST(ManifestNotes, AManifestNewerThanTheHostSaysWhatItMustSpeak) {
  const PluginManifest m = cpu_manifest([](json& j) { j["abi"]["minor"] = MLH_ABI_VERSION_MINOR + 6; });
  const std::vector<std::string> notes = manifest_notes(m);
  ASSERT_EQ(notes.size(), 1u);
  const std::string host = std::to_string(MLH_ABI_VERSION_MAJOR) + "." + std::to_string(MLH_ABI_VERSION_MINOR);
  EXPECT_NE(notes[0].find("manifest says ABI 1." + std::to_string(MLH_ABI_VERSION_MINOR + 6) +
                          ", newer than this host's " + host),
            std::string::npos)
      << notes[0];
  EXPECT_EQ(promised_abi(m), host) << "the code must fall back to the host's version";
  // Where to see the version the code negotiates: the probe loads device plugins, --describe
  // an algorithm plugin.
  EXPECT_NE(notes[0].find("--probe shows the version it negotiates"), std::string::npos) << notes[0];
  PluginManifest algorithm = m;
  algorithm.kind = "algorithm";
  algorithm.name = "myalgo";
  const std::vector<std::string> algorithm_notes = manifest_notes(algorithm);
  ASSERT_EQ(algorithm_notes.size(), 1u);
  EXPECT_NE(algorithm_notes[0].find("--describe myalgo shows the version it negotiates"), std::string::npos)
      << algorithm_notes[0];
}

TEST(ManifestNotes, AnUnoptimizedBuildIsNotedAndAnOptimizedOneIsNot) {
  for (const std::string type : {"", "Debug"}) {
    const PluginManifest m = cpu_manifest([&](json& j) { j["build"]["build_type"] = type; });
    const std::vector<std::string> notes = manifest_notes(m);
    ASSERT_EQ(notes.size(), 1u) << "'" << type << "'";
    EXPECT_NE(notes[0].find("built without optimization (build_type '" + type + "')"), std::string::npos) << notes[0];
  }
  for (const std::string type : {"Release", "RelWithDebInfo", "MinSizeRel", "Profiling"}) {
    const PluginManifest m = cpu_manifest([&](json& j) { j["build"]["build_type"] = type; });
    EXPECT_TRUE(manifest_notes(m).empty()) << type;
  }
}

TEST(ManifestNotes, ANegotiatedVersionTheManifestDidNotPromiseIsAMismatch) {
  const PluginManifest says_1_0 = cpu_manifest([](json& j) { j["abi"]["minor"] = 0; });
  const auto mismatch = negotiated_abi_mismatch(says_1_0, "1.1");
  ASSERT_TRUE(mismatch.has_value());
  EXPECT_NE(mismatch->find("its code negotiated ABI 1.1 but its manifest says 1.0"), std::string::npos) << *mismatch;
  EXPECT_EQ(negotiated_abi_mismatch(says_1_0, "1.0"), std::nullopt);
}

// A folder with the real CPU plugin's library and its manifest saying ABI 1.<minor>, as a
// plugin folder must be (not writable by others).
fs::path cpu_plugin_folder(const fs::path& dir, uint32_t minor) {
  fs::create_directories(dir);
  ::chmod(dir.c_str(), 0755);
  fs::copy_file(MLH_TEST_CPU_PLUGIN, dir / fs::path(MLH_TEST_CPU_PLUGIN).filename());
  json manifest = json::parse(testing::read_text(MLH_TEST_CPU_MANIFEST));
  manifest["abi"]["minor"] = minor;
  write_text(dir / "cpu.plugin.json", manifest.dump());
  ::chmod((dir / "cpu.plugin.json").c_str(), 0644);
  return dir;
}

std::vector<std::string> probe_warnings(const fs::path& dir) {
  DiscoveryOptions o;
  o.plugin_dirs = {dir};
  o.use_default_dir = false;
  const Discovery d = discover_plugins(o);
  for (const PluginProbe& p : probe_device_plugins(d, std::chrono::seconds(30)))
    if (p.name == "cpu") {
      EXPECT_EQ(p.status, PluginProbe::Status::kOk) << p.reason;
      return p.warnings;
    }
  ADD_FAILURE() << "no cpu plugin probed in " << dir;
  return {};
}

TEST(ManifestNotes, TheProbeFlagsAManifestThatDisagreesWithItsCode) {
  TempDir t;
  // The code speaks 1.1; a manifest saying 1.0 promised 1.0.
  const auto older = probe_warnings(cpu_plugin_folder(t / "older", 0));
  EXPECT_TRUE(any_contains(older, "its code negotiated ABI 1." + std::to_string(MLH_ABI_VERSION_MINOR) +
                                      " but its manifest says 1.0"));
  // A manifest saying 1.7 cannot be told from a newer plugin that falls back, so the note
  // that it is newer than the host is what both listings show.
  const auto newer = probe_warnings(cpu_plugin_folder(t / "newer", 7));
  EXPECT_TRUE(any_contains(newer, "manifest says ABI 1.7, newer than this host's"));
  EXPECT_FALSE(any_contains(newer, "negotiated"));
  // The shipped manifest: nothing to say.
  EXPECT_TRUE(probe_warnings(cpu_plugin_folder(t / "same", MLH_ABI_VERSION_MINOR)).empty());
}

}  // namespace
}  // namespace mlhost
