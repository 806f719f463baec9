#include "plugins/manifest.hpp"

#include <gtest/gtest.h>

#include "test_files.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace mlhost {
namespace {

using testing::manifest_text;

std::string parse_error(const std::string& text) {
  try {
    parse_manifest(text, "/plugins/x.plugin.json");
  } catch (const ManifestError& e) {
    return e.what();
  }
  return "";
}

TEST(Manifest, ParsesWhatTheSdkWrites) {
  PluginManifest m = read_manifest(MLH_TEST_CPU_MANIFEST);
  EXPECT_EQ(m.kind, "device");
  EXPECT_EQ(m.name, "cpu");
  EXPECT_EQ(m.abi_major, 1u);
  EXPECT_EQ(m.library_path, std::filesystem::path(MLH_TEST_CPU_PLUGIN));
  EXPECT_FALSE(m.torch_version.has_value()) << "device plugins must not link LibTorch";
  EXPECT_FALSE(m.build_arch.empty());
}

TEST(Manifest, ReadsTorchBuildFacts) {
  PluginManifest m = parse_manifest(
      R"({"manifest_version":1,"kind":"algorithm","name":"a","version":"1","abi":{"major":1,"minor":2},
          "library":"liba.so","build":{"arch":"x86_64","torch":{"version":"2.4.0","cuda":true}}})",
      "/p/a.plugin.json");
  EXPECT_EQ(m.abi_minor, 2u);
  ASSERT_TRUE(m.torch_version.has_value());
  EXPECT_EQ(*m.torch_version, "2.4.0");
  EXPECT_EQ(m.torch_backends, (std::vector<std::string>{"cpu", "cuda"})) << "an older SDK's cuda flag";
  EXPECT_EQ(m.library_path, std::filesystem::path("/p/liba.so"));
}

// build.torch.backends: the LibTorch device types the plugin's LibTorch runs. Where it is
// missing (an older SDK), "cpu", "cuda" from the cuda flag and "mps" from a macOS build.
TEST(Manifest, ReadsTheBackendsItsLibTorchRuns) {
  const auto with = [](const std::string& build) {
    return parse_manifest(R"({"manifest_version":1,"kind":"algorithm","name":"a","version":"1","abi":{"major":1,"minor":2},
              "library":"liba.so","build":)" + build + "}",
                          "/p/a.plugin.json");
  };
  EXPECT_EQ(with(R"({"torch":{"version":"2.15.0","backends":["cpu","xpu"],"cuda":true}})").torch_backends,
            (std::vector<std::string>{"cpu", "xpu"}))
      << "the list wins over the flag";
  EXPECT_EQ(with(R"({"system":"Darwin","torch":{"version":"2.15.0","cuda":false}})").torch_backends,
            (std::vector<std::string>{"cpu", "mps"}));
  EXPECT_EQ(with(R"({"system":"Linux","torch":{"version":"2.15.0"}})").torch_backends, (std::vector<std::string>{"cpu"}));
  EXPECT_TRUE(with(R"({"torch":null})").torch_backends.empty());
  for (const char* bad : {R"("cuda")", R"([1])", R"([""])"}) {
    try {
      with(std::string(R"({"torch":{"version":"2.15.0","backends":)") + bad + "}}");
      ADD_FAILURE() << bad << " accepted";
    } catch (const ManifestError& e) {
      EXPECT_NE(std::string(e.what()).find("build.torch.backends"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("a.plugin.json"), std::string::npos) << e.what();
    }
  }
}

// build.torch.distributed: the backends the plugin's runtime was built with. Absent (an older
// SDK's plugin) is unknown, not empty: only a manifest that says refuses anything.
TEST(Manifest, ReadsTheDistributedBackendsItWasBuiltWith) {
  const auto with = [](const std::string& torch) {
    return R"({"manifest_version":1,"kind":"algorithm","name":"a","version":"1","abi":{"major":1,"minor":2},
              "library":"liba.so","build":{"torch":)" + torch + "}}";
  };
  const PluginManifest both = parse_manifest(with(R"({"version":"2.15.0","distributed":["gloo","nccl"]})"), "/p/a.plugin.json");
  ASSERT_TRUE(both.torch_distributed.has_value());
  EXPECT_EQ(*both.torch_distributed, (std::vector<std::string>{"gloo", "nccl"}));
  const PluginManifest none = parse_manifest(with(R"({"version":"2.15.0","distributed":[]})"), "/p/a.plugin.json");
  ASSERT_TRUE(none.torch_distributed.has_value());
  EXPECT_TRUE(none.torch_distributed->empty());
  EXPECT_FALSE(parse_manifest(with(R"({"version":"1.13.1"})"), "/p/a.plugin.json").torch_distributed.has_value());
  const std::string e = parse_error(with(R"({"version":"2.15.0","distributed":"gloo"})"));
  EXPECT_NE(e.find("'build.torch.distributed'"), std::string::npos) << e;
  EXPECT_NE(parse_error(with(R"({"version":"2.15.0","distributed":[1]})")).find("'build.torch.distributed'"),
            std::string::npos);
}

TEST(Manifest, ErrorsNameTheFileAndField) {
  EXPECT_NE(parse_error("{not json").find("invalid JSON"), std::string::npos);
  EXPECT_NE(parse_error("[]").find("JSON object"), std::string::npos);
  std::string e = parse_error(R"({"manifest_version":1,"kind":"device","version":"1","abi":{"major":1,"minor":0},"library":"l.so"})");
  EXPECT_NE(e.find("/plugins/x.plugin.json"), std::string::npos) << e;
  EXPECT_NE(e.find("'name'"), std::string::npos) << e;
  EXPECT_NE(parse_error(manifest_text("x", "l.so", "gadget")).find("'kind'"), std::string::npos);
  EXPECT_NE(parse_error(manifest_text("Bad Name", "l.so")).find("'name'"), std::string::npos);
  EXPECT_NE(parse_error(manifest_text("x", "../evil.so")).find("'library'"), std::string::npos);
  EXPECT_NE(parse_error(manifest_text("x", "/usr/lib/evil.so")).find("'library'"), std::string::npos);
  EXPECT_NE(parse_error(R"({"manifest_version":2})").find("manifest_version"), std::string::npos);
  EXPECT_NE(parse_error(R"({"manifest_version":1,"kind":"device","name":"x","version":"1","abi":{"major":-1,"minor":0},"library":"l.so"})")
                .find("abi"),
            std::string::npos);
}

TEST(Manifest, UnreadableFileIsAnError) {
  EXPECT_THROW(read_manifest("/nonexistent/x.plugin.json"), ManifestError);
}

TEST(Manifest, PluginNames) {
  EXPECT_TRUE(is_valid_plugin_name("cpu"));
  EXPECT_TRUE(is_valid_plugin_name("my-plugin_2"));
  EXPECT_FALSE(is_valid_plugin_name(""));
  EXPECT_FALSE(is_valid_plugin_name("2cpu"));
  EXPECT_FALSE(is_valid_plugin_name("CPU"));
  EXPECT_FALSE(is_valid_plugin_name("a/b"));
  EXPECT_FALSE(is_valid_plugin_name(std::string(65, 'a')));
}

}  // namespace
}  // namespace mlhost
