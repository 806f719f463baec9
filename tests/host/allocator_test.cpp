// The worker's allocator in the plan (plan/allocator.hpp): which one, where its library is
// found, how a missing one falls back, what the settings file tunes, and what the device
// plugins turn it into (host/plan/allocator_env.hpp).
#include "plan/allocator.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "plan/allocator_env.hpp"

#include "plan/hardware_settings.hpp"
#include "plan/plan_text.hpp"
#include "planning.hpp"
#include "test_files.hpp"
#include "test_devices.hpp"

namespace mlhost {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

Device cpu() { return testing::epyc_cpu(); }

// A folder holding stand-ins for the allocator libraries named.
class AllocatorFolder {
 public:
  explicit AllocatorFolder(std::initializer_list<const char*> names) {
    for (const char* n : names) std::ofstream(fs::path(dir_.path()) / allocator_library_file(n)) << "ELF";
  }
  const char* path() const { return dir_.path().c_str(); }

 private:
  TempDir dir_;
};

// The plan with allocator libraries looked for in `search_path` only; `asked` as the command
// line gives it ("auto" arrives unset, as cli/run_setup.cpp passes it on).
json plan_with(const Device& d, const char* search_path, std::optional<std::string> asked = std::nullopt,
               const HardwareSettings* settings = nullptr) {
  PlanRequest request = testing::request_for(d);
  if (search_path) request.allocators.path = search_path;
  request.allocators.system = false;
  if (asked != "auto") request.overrides.allocator = asked;
  if (settings) request.settings = *settings;
  testing::FakePlanServices services;
  return plan_run(request, services).plan;
}

HardwareSettings settings_from(const std::string& text) { return parse_hardware_settings(text, "hw.ini"); }

// Under AddressSanitizer the plan always keeps glibc (the sanitizer must own malloc), so the
// choice itself is tested in the ordinary build.
#define SKIP_UNDER_ASAN()                                                                             \
  if (built_with_address_sanitizer()) GTEST_SKIP() << "AddressSanitizer build: the plan keeps glibc"

TEST(Allocator, AnAddressSanitizerBuildKeepsGlibc) {
  if (!built_with_address_sanitizer()) GTEST_SKIP() << "not an AddressSanitizer build";
  const json p = plan_with(cpu(), nullptr, "jemalloc");
  EXPECT_EQ(p["allocator"]["name"], "glibc");
  EXPECT_NE(p["sources"]["allocator"].get<std::string>().find("AddressSanitizer"), std::string::npos);
}

TEST(Allocator, LibrariesAreFoundInTheSearchPathFirst) {
  AllocatorFolder first({"jemalloc"}), second({"jemalloc", "tcmalloc"});
  const std::string path = std::string(first.path()) + ":" + second.path();
  EXPECT_EQ(find_allocator_library("jemalloc", path.c_str(), false), fs::path(first.path()) / "libjemalloc.so.2");
  EXPECT_EQ(find_allocator_library("tcmalloc", path.c_str(), false),
            fs::path(second.path()) / "libtcmalloc_minimal.so.4");
  EXPECT_FALSE(find_allocator_library("glibc", path.c_str(), false));
  EXPECT_FALSE(find_allocator_library("jemalloc", nullptr, false));
  const auto folders = allocator_search_folders("/opt/a::/opt/b", true);
  ASSERT_GE(folders.size(), 3u);
  EXPECT_EQ(folders[0], "/opt/a");
  EXPECT_EQ(folders[1], "/opt/b");
  EXPECT_NE(std::find(folders.begin(), folders.end(), fs::path("/usr/lib")), folders.end());
}

TEST(Allocator, DefaultIsJemallocWhereItsLibraryIs) {
  SKIP_UNDER_ASAN();
  AllocatorFolder libs({"jemalloc"});
  const json p = plan_with(cpu(), libs.path());
  EXPECT_EQ(p["allocator"]["name"], "jemalloc");
  EXPECT_EQ(p["allocator"]["library"], (fs::path(libs.path()) / "libjemalloc.so.2").string());
  EXPECT_EQ(p["allocator"]["settings"]["conf"], "dirty_decay_ms:-1,muzzy_decay_ms:-1");
  EXPECT_NE(p["sources"]["allocator"].get<std::string>().find("default"), std::string::npos);
  EXPECT_NE(plan_to_text(p).find("allocator                jemalloc"), std::string::npos) << plan_to_text(p);
}

TEST(Allocator, AMissingLibraryFallsBackAndThePlanSaysSo) {
  SKIP_UNDER_ASAN();
  AllocatorFolder only_tcmalloc({"tcmalloc"}), none({});
  json p = plan_with(cpu(), only_tcmalloc.path());
  EXPECT_EQ(p["allocator"]["name"], "tcmalloc");
  EXPECT_NE(p["sources"]["allocator"].get<std::string>().find("libjemalloc.so.2 not found, so tcmalloc"), std::string::npos)
      << p["sources"]["allocator"];
  p = plan_with(cpu(), none.path());
  EXPECT_EQ(p["allocator"]["name"], "glibc-tuned");
  EXPECT_FALSE(p["allocator"].contains("library"));
  EXPECT_EQ(p["allocator"]["settings"]["mmap_threshold"], 32ll << 20);
  EXPECT_NE(p["sources"]["allocator"].get<std::string>().find("libjemalloc.so.2, libtcmalloc_minimal.so.4 not found"),
            std::string::npos);
  // Asked for by name, the same: the run goes on with what there is.
  p = plan_with(cpu(), none.path(), "tcmalloc");
  EXPECT_EQ(p["allocator"]["name"], "glibc-tuned");
  EXPECT_NE(p["sources"]["allocator"].get<std::string>().find("command line --allocator"), std::string::npos);
}

TEST(Allocator, CommandLineWinsOverTheSettingsFileWhichWinsOverTheDefault) {
  SKIP_UNDER_ASAN();
  AllocatorFolder libs({"jemalloc", "tcmalloc"});
  const HardwareSettings s = settings_from("allocator = tcmalloc\n[cpu]\nallocator = glibc\n");
  json p = plan_with(cpu(), libs.path(), std::nullopt, &s);
  EXPECT_EQ(p["allocator"]["name"], "glibc");
  EXPECT_EQ(p["sources"]["allocator"], "settings file hw.ini:3");
  p = plan_with(cpu(), libs.path(), "jemalloc", &s);
  EXPECT_EQ(p["allocator"]["name"], "jemalloc");
  EXPECT_EQ(p["sources"]["allocator"], "command line --allocator");
  p = plan_with(cpu(), libs.path(), "auto", &s);
  EXPECT_EQ(p["allocator"]["name"], "glibc") << "--allocator auto leaves it to the settings file";
}

TEST(Allocator, TheSettingsFileTunesTheChosenAllocator) {
  SKIP_UNDER_ASAN();
  AllocatorFolder libs({"jemalloc"});
  const HardwareSettings s = settings_from(
      "allocator = glibc-tuned\nmalloc_mmap_threshold = 1048576\nmalloc_top_pad = 0\njemalloc_conf = narenas:2\n");
  json p = plan_with(cpu(), libs.path(), std::nullopt, &s);
  EXPECT_EQ(p["allocator"]["settings"]["mmap_threshold"], 1048576);
  EXPECT_EQ(p["allocator"]["settings"]["top_pad"], 0);
  EXPECT_EQ(p["allocator"]["settings"]["trim_threshold"], 4ll << 30) << "the default where the file is silent";
  p = plan_with(cpu(), libs.path(), "jemalloc", &s);
  EXPECT_EQ(p["allocator"]["settings"]["conf"], "narenas:2");
}

TEST(Allocator, BadSettingsNameTheKey) {
  auto error = [](const std::string& text) {
    try {
      settings_from(text);
    } catch (const SettingsError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error("allocator = fast\n").find("allocator"), std::string::npos);
  EXPECT_NE(error("malloc_mmap_threshold = 99999999999\n").find("malloc_mmap_threshold"), std::string::npos);
  EXPECT_NE(error("malloc_top_pad = -1\n").find("malloc_top_pad"), std::string::npos);
  EXPECT_NE(error("jemalloc_conf = no colon\n").find("jemalloc_conf"), std::string::npos);
}

TEST(AllocatorEnvironment, EachAllocatorBecomesWhatTheWorkerProgramReads) {
  auto env = [](const json& allocator, const char* preload = nullptr, const char* tunables = nullptr) {
    std::map<std::string, std::string> out;
    for (const auto& v : mlhost::allocator_environment(mlh::PlanReader(json{{"allocator", allocator}}.dump()), preload, tunables))
      out[v.name] = v.value;
    return out;
  };
  EXPECT_TRUE(env({{"name", "glibc"}}).empty());
  EXPECT_TRUE(mlhost::allocator_environment(mlh::PlanReader("{}"), nullptr, nullptr).empty());
  auto je = env({{"name", "jemalloc"}, {"library", "/l/libjemalloc.so.2"}, {"settings", {{"conf", "a:1"}}}});
  EXPECT_EQ(je["LD_PRELOAD"], "/l/libjemalloc.so.2");
  EXPECT_EQ(je["MALLOC_CONF"], "a:1");
  je = env({{"name", "jemalloc"}, {"library", "/l/libjemalloc.so.2"}}, "/mine.so");
  EXPECT_EQ(je["LD_PRELOAD"], "/l/libjemalloc.so.2:/mine.so") << "the user's own preloads stay";
  EXPECT_FALSE(je.count("MALLOC_CONF"));
  const auto tuned = env({{"name", "glibc-tuned"}, {"settings", {{"mmap_threshold", 1024}, {"top_pad", 0}}}}, nullptr,
                         "glibc.pthread.rseq=0");
  EXPECT_EQ(tuned.at("GLIBC_TUNABLES"), "glibc.pthread.rseq=0:glibc.malloc.mmap_threshold=1024:glibc.malloc.top_pad=0");
  EXPECT_THROW(env({{"name", "tcmalloc"}}), mlh::Error) << "a preloaded allocator needs its library";
  EXPECT_THROW(env({{"name", "tcmalloc"}, {"library", "relative.so"}}), mlh::Error);
  EXPECT_THROW(env({{"name", "mimalloc"}}), mlh::Error);
}

}  // namespace
}  // namespace mlhost
