#include <gtest/gtest.h>
#include <sys/stat.h>

#include "plugins/plugin_loader.hpp"
#include "test_files.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace mlhost {
namespace {

namespace fs = std::filesystem;

PluginManifest manifest(const std::string& kind = "device", const std::string& name = "cpu",
                        const std::string& version = "0.1.0") {
  PluginManifest m;
  m.kind = kind;
  m.name = name;
  m.version = version;
  m.abi_major = 1;
  m.library_path = MLH_TEST_CPU_PLUGIN;
  return m;
}

mlh_negotiate_response answer(uint32_t major, uint32_t minor, int32_t kind = MLH_PLUGIN_KIND_DEVICE,
                              const char* name = "cpu", const char* version = "0.1.0") {
  static const int table = 0;
  return mlh_negotiate_response{sizeof(mlh_negotiate_response), major, minor, kind, name, version, &table};
}

std::vector<mlh_abi_version> offer(std::initializer_list<std::pair<uint32_t, uint32_t>> versions) {
  std::vector<mlh_abi_version> out;
  for (auto [ma, mi] : versions) out.push_back({sizeof(mlh_abi_version), ma, mi});
  return out;
}

TEST(Negotiation, AcceptsSameMajorAndAnOfferedMinor) {
  EXPECT_EQ(check_negotiation(offer({{1, 0}}), answer(1, 0), manifest()), "");
  EXPECT_EQ(check_negotiation(offer({{1, 3}}), answer(1, 2), manifest()), "") << "older plugin minor is fine";
  EXPECT_EQ(check_negotiation(offer({{2, 0}, {1, 4}}), answer(1, 4), manifest()), "");
}

TEST(Negotiation, RefusesOtherMajorsAndUnofferedMinors) {
  EXPECT_EQ(check_negotiation(offer({{1, 0}}), answer(2, 0), manifest()),
            "plugin speaks ABI 2.0, this host speaks 1.x");
  EXPECT_EQ(check_negotiation(offer({{1, 0}}), answer(0, 9), manifest()),
            "plugin speaks ABI 0.9, this host speaks 1.x");
  EXPECT_NE(check_negotiation(offer({{1, 0}}), answer(1, 1), manifest()).find("did not offer"), std::string::npos);
}

TEST(Negotiation, RefusesWhenManifestAndLibraryDisagree) {
  EXPECT_NE(check_negotiation(offer({{1, 0}}), answer(1, 0, MLH_PLUGIN_KIND_ALGORITHM), manifest())
                .find("manifest says a device plugin, the library is a algorithm plugin"),
            std::string::npos);
  EXPECT_EQ(check_negotiation(offer({{1, 0}}), answer(1, 0, MLH_PLUGIN_KIND_DEVICE, "gpu"), manifest()),
            "manifest and library disagree: manifest name 'cpu', library name 'gpu'");
  EXPECT_NE(check_negotiation(offer({{1, 0}}), answer(1, 0, MLH_PLUGIN_KIND_DEVICE, "cpu", "9.9"), manifest())
                .find("version"),
            std::string::npos);
  mlh_negotiate_response no_table = answer(1, 0);
  no_table.table = nullptr;
  EXPECT_EQ(check_negotiation(offer({{1, 0}}), no_table, manifest()), "plugin returned no function table");
}

TEST(Negotiation, LoadsTheRealCpuPlugin) {
  LoadedPlugin p = load_plugin(manifest());
  EXPECT_EQ(p.abi_major(), 1u);
  EXPECT_EQ(p.abi_minor(), static_cast<uint32_t>(MLH_ABI_VERSION_MINOR)) << "built with this SDK: its minor";
  ASSERT_NE(p.device_table(), nullptr);
  EXPECT_EQ(p.algorithm_table(), nullptr);
  PluginInstance<mlh_device_plugin> instance(p.device_table(), "cpu");
  const mlh_device_record* records = nullptr;
  uint32_t count = 0;
  mlh_error err = make_error();
  ASSERT_EQ(p.device_table()->probe(instance.get(), &records, &count, &err), MLH_OK) << err.message;
  EXPECT_EQ(count, 1u);
}

TEST(Negotiation, LoadRefusesAMismatchedManifest) {
  try {
    load_plugin(manifest("device", "notcpu"));
    FAIL();
  } catch (const PluginLoadError& e) {
    EXPECT_NE(std::string(e.what()).find("manifest name 'notcpu', library name 'cpu'"), std::string::npos) << e.what();
  }
  try {
    load_plugin(manifest("algorithm"));
    FAIL();
  } catch (const PluginLoadError& e) {
    EXPECT_NE(std::string(e.what()).find("disagree"), std::string::npos) << e.what();
  }
}

TEST(Negotiation, LoadRefusesLibrariesThatAreNotPlugins) {
  TempDir t;
  PluginManifest m = manifest();
  m.library_path = t / "libtext.so";
  testing::write_text(m.library_path, "hello");
  try {
    load_plugin(m);
    FAIL();
  } catch (const PluginLoadError& e) {
    EXPECT_NE(std::string(e.what()).find("no ELF header"), std::string::npos) << e.what();
  }
  // A real shared library without the entry symbol.
  m.library_path = "/lib/x86_64-linux-gnu/libm.so.6";
  if (!fs::exists(m.library_path)) m.library_path = "/lib/aarch64-linux-gnu/libm.so.6";
  try {
    load_plugin(m);
    FAIL();
  } catch (const PluginLoadError& e) {
    EXPECT_NE(std::string(e.what()).find("no entry symbol 'mlh_plugin_negotiate'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mlhost
