// Plugin trust with the real host: code loads only from the search path (no library
// outside its manifest's folder, by name or by symbolic link), files owned by another user
// are refused unless allowed, and the SHA-256 allow-list (--plugin-allowlist,
// $MLH_PLUGIN_ALLOWLIST) pins plugins by their library's content.
#include <sys/stat.h>
#include <unistd.h>

#include "cli_harness.hpp"

namespace mlhost::cli_test {
namespace {

class TrustTest : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_TRUE(fs::exists(marker_plugin_dir() / "climarker.plugin.json")) << marker_plugin_dir();
    dir_ = tmp() / "plugins";
    copy_plugin_dir(marker_plugin_dir(), dir_);
    manifest_ = dir_ / "climarker.plugin.json";
    library_ = dir_ / "libmlhost-climarker.so";
    ASSERT_TRUE(fs::exists(library_)) << library_;
    marker_ = tmp() / "marker.txt";
  }

  // The library's SHA-256 by the system's sha256sum (an implementation independent of ours).
  std::string sha256sum(const fs::path& file) {
    const Result r = run({"/usr/bin/sha256sum", file.string()});
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    return r.out.substr(0, 64);
  }

  RunOptions with_marker(std::map<std::string, std::string> env = {}) {
    RunOptions o;
    o.env = std::move(env);
    o.env["MLH_CLI_MARKER_FILE"] = marker_.string();
    return o;
  }

  // climarker's entry in `host --list-plugins --json --plugin-dir <dir_> <extra>`.
  json listed(const std::vector<std::string>& extra, RunOptions o = {}) {
    std::vector<std::string> args{"--plugin-dir", dir_.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    const json list = list_plugins(args, o);
    const json* p = list.is_discarded() ? nullptr : find_plugin(list, "climarker");
    EXPECT_NE(p, nullptr) << list.dump(2);
    return p ? *p : json();
  }

  // climarker's entry in `host --probe --json`, and whether any process loaded its code.
  json probed(const std::vector<std::string>& extra, bool& loaded, RunOptions o = {}) {
    std::vector<std::string> args{"--plugin-dir", dir_.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    fs::remove(marker_);
    o.env["MLH_CLI_MARKER_FILE"] = marker_.string();
    const json report = probe(args, o);
    loaded = !read_file(marker_).empty();
    const json* p = report.is_discarded() ? nullptr : find_plugin(report, "climarker");
    EXPECT_NE(p, nullptr) << report.dump(2);
    return p ? *p : json();
  }

  fs::path dir_, manifest_, library_, marker_;
};

// --- only from the search path ---------------------------------------------------------------

TEST_F(TrustTest, ManifestNamingAnAbsoluteLibraryPathIsAProblem) {
  json m = file_json(manifest_);
  m["library"] = library_.string();
  write_file(manifest_, m.dump());
  const json list = list_plugins({"--plugin-dir", dir_.string()});
  EXPECT_EQ(find_plugin(list, "climarker"), nullptr) << list.dump(2);
  ASSERT_EQ(list["problems"].size(), 1u) << list.dump(2);
  EXPECT_TRUE(contains(str(list["problems"][0]["reason"]), "'library' must be a file name in the manifest's folder"))
      << list.dump(2);
}

TEST_F(TrustTest, LibraryLinkedFromOutsideTheSearchPathIsRefusedWhateverTheFlags) {
  const fs::path elsewhere = tmp() / "elsewhere";
  fs::create_directories(elsewhere);
  fs::rename(library_, elsewhere / "libmlhost-climarker.so");
  fs::create_symlink(elsewhere / "libmlhost-climarker.so", library_);
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{}, std::vector<std::string>{"--allow-unsafe-plugins"}}) {
    const json p = listed(extra);
    EXPECT_EQ(p["loadable"], false) << p.dump(2);
    EXPECT_TRUE(contains(str(p["refused"]), "is a symbolic link to '" + (elsewhere / "libmlhost-climarker.so").string() +
                                                "', outside the plugin folder"))
        << p.dump(2);
    bool loaded = true;
    const json q = probed(extra, loaded);
    EXPECT_EQ(q["status"], "refused") << q.dump(2);
    EXPECT_FALSE(loaded) << "a refused plugin's code was loaded";
  }
  // A link within the folder (libx.so -> libx.so.1) is an ordinary install layout: loads.
  fs::remove(library_);
  fs::rename(elsewhere / "libmlhost-climarker.so", dir_ / "libmlhost-climarker.so.1");
  fs::create_symlink("libmlhost-climarker.so.1", library_);
  bool loaded = false;
  const json q = probed({}, loaded);
  EXPECT_EQ(q["status"], "ok") << q.dump(2);
  EXPECT_TRUE(loaded);
}

// --- ownership ---------------------------------------------------------------------------------

TEST_F(TrustTest, PluginOwnedByAnotherUserIsRefusedUnlessAllowed) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give the plugin copy to another user (uid 65534, nobody)";
  for (const fs::path& target : {library_, manifest_, dir_}) {
    ASSERT_EQ(::chown(target.c_str(), 65534, 65534), 0) << target;
    json p = listed({});
    EXPECT_EQ(p["loadable"], false) << p.dump(2);
    EXPECT_TRUE(contains(str(p["refused"]), "unsafe owner: '" + target.string() + "' is owned by")) << p.dump(2);
    EXPECT_TRUE(contains(str(p["refused"]), "(uid 65534), neither this user (uid 0) nor root")) << p.dump(2);
    bool loaded = true;
    json q = probed({}, loaded);
    EXPECT_EQ(q["status"], "refused") << q.dump(2);
    EXPECT_FALSE(loaded) << "a refused plugin's code was loaded";

    p = listed({"--allow-unsafe-plugins"});
    EXPECT_EQ(p["loadable"], true) << p.dump(2);
    EXPECT_TRUE(contains(p["warnings"].dump(), "unsafe owner")) << p.dump(2);
    q = probed({"--allow-unsafe-plugins"}, loaded);
    EXPECT_EQ(q["status"], "ok") << q.dump(2);
    EXPECT_TRUE(loaded);
    ASSERT_EQ(::chown(target.c_str(), 0, 0), 0) << target;
  }
}

// --- the SHA-256 allow-list ----------------------------------------------------------------------

TEST_F(TrustTest, AllowListLoadsOnlyPinnedLibraries) {
  const std::string digest = sha256sum(library_);
  ASSERT_EQ(digest.size(), 64u);
  const fs::path allow = tmp() / "allow.txt";

  // Without an allow-list nothing is hashed.
  EXPECT_TRUE(listed({})["sha256"].is_null());

  // Pinned: loads, and the listing shows the hash (ours agrees with sha256sum).
  write_file(allow, "# test pins\n" + digest + "  climarker\n");
  json p = listed({"--plugin-allowlist", allow.string()});
  EXPECT_EQ(p["loadable"], true) << p.dump(2);
  EXPECT_EQ(p["sha256"], digest) << p.dump(2);
  bool loaded = false;
  json q = probed({"--plugin-allowlist", allow.string()}, loaded);
  EXPECT_EQ(q["status"], "ok") << q.dump(2);
  EXPECT_TRUE(loaded);
  const Result text = host({"--list-plugins", "--plugin-dir", dir_.string(), "--plugin-allowlist", allow.string()});
  EXPECT_TRUE(contains(text.out, "sha256 " + digest)) << text.describe();

  // Another hash pinned: refused, both hashes shown, code never loaded.
  const std::string wrong(64, '0');
  write_file(allow, wrong + "  climarker\n");
  p = listed({"--plugin-allowlist", allow.string()});
  EXPECT_EQ(p["loadable"], false) << p.dump(2);
  EXPECT_TRUE(contains(str(p["refused"]), "SHA-256 mismatch")) << p.dump(2);
  EXPECT_TRUE(contains(str(p["refused"]), digest)) << p.dump(2);
  EXPECT_TRUE(contains(str(p["refused"]), wrong)) << p.dump(2);
  q = probed({"--plugin-allowlist", allow.string()}, loaded);
  EXPECT_EQ(q["status"], "refused") << q.dump(2);
  EXPECT_FALSE(loaded) << "a refused plugin's code was loaded";

  // Not listed (the CPU plugin is, so the machine still has a device): refused without
  // reading the library, with how to pin it.
  write_file(allow, sha256sum(default_plugin_dir() / "libmlhost-cpu.so") + "  cpu\n");
  p = listed({"--plugin-allowlist", allow.string()});
  EXPECT_EQ(p["loadable"], false) << p.dump(2);
  EXPECT_TRUE(contains(str(p["refused"]), "no entry for 'climarker'")) << p.dump(2);
  EXPECT_TRUE(contains(str(p["refused"]), "sha256sum " + library_.string())) << p.dump(2);
  EXPECT_TRUE(p["sha256"].is_null()) << p.dump(2);
  const json report = probe({"--plugin-dir", dir_.string(), "--plugin-allowlist", allow.string()});
  EXPECT_EQ(report["chosen"], "cpu:0") << report.dump(2);

  // A changed library (same name, other bytes) no longer matches its pin.
  write_file(allow, digest + "  climarker\n");
  {
    std::string bytes = read_file(library_);
    bytes += std::string(16, '\0');  // still a valid ELF object, different content
    write_file(library_, bytes, fs::perms(0755));
  }
  p = listed({"--plugin-allowlist", allow.string()});
  EXPECT_EQ(p["loadable"], false) << p.dump(2);
  EXPECT_TRUE(contains(str(p["refused"]), "SHA-256 mismatch")) << p.dump(2);
}

TEST_F(TrustTest, AllowListFromTheEnvironmentAndTheFlagWins) {
  const std::string digest = sha256sum(library_);
  write_file(tmp() / "good.txt", digest + "  climarker\n");
  write_file(tmp() / "bad.txt", std::string(64, 'f') + "  climarker\n");
  RunOptions env;
  env.env["MLH_PLUGIN_ALLOWLIST"] = (tmp() / "bad.txt").string();
  json p = listed({}, env);
  EXPECT_EQ(p["loadable"], false) << p.dump(2);
  EXPECT_TRUE(contains(str(p["refused"]), "MLH_PLUGIN_ALLOWLIST")) << p.dump(2);
  p = listed({"--plugin-allowlist", (tmp() / "good.txt").string()}, env);
  EXPECT_EQ(p["loadable"], true) << "--plugin-allowlist wins over MLH_PLUGIN_ALLOWLIST: " << p.dump(2);
  env.env["MLH_PLUGIN_ALLOWLIST"] = "";
  EXPECT_TRUE(listed({}, env)["sha256"].is_null()) << "an empty MLH_PLUGIN_ALLOWLIST is no allow-list";
}

TEST_F(TrustTest, MalformedOrMissingAllowListIsABadCommandLine) {
  const fs::path allow = tmp() / "allow.txt";
  write_file(allow, "# ok\n" + std::string(64, 'a') + "  cpu\nnot-a-hash climarker\n");
  for (const std::vector<std::string>& action :
       {std::vector<std::string>{"--list-plugins"}, std::vector<std::string>{"--probe"}}) {
    std::vector<std::string> args = action;
    args.insert(args.end(), {"--plugin-dir", dir_.string(), "--plugin-allowlist", allow.string()});
    const Result r = host(args);
    EXPECT_EQ(r.exit_code, 2) << r.describe();
    EXPECT_TRUE(contains(r.err, "plugin allow-list '" + allow.string() + "', line 3")) << r.describe();
    EXPECT_TRUE(contains(r.err, "64 hex digits")) << r.describe();
  }
  RunOptions env;
  env.env["MLH_PLUGIN_ALLOWLIST"] = (tmp() / "missing.txt").string();
  const Result r = host({"--list-plugins"}, env);
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "cannot read the plugin allow-list '" + (tmp() / "missing.txt").string() + "'"))
      << r.describe();
  EXPECT_TRUE(contains(r.err, "MLH_PLUGIN_ALLOWLIST")) << r.describe();
}

TEST_F(TrustTest, AlgorithmNotInTheAllowListDoesNotRun) {
  if (!have_toyreg()) GTEST_SKIP() << "this build has no toyreg plugin";
  const fs::path toyreg = case_dir("toyreg");
  write_file(tmp() / "allow.txt", sha256sum(default_plugin_dir() / "libmlhost-cpu.so") + "  cpu\n");
  const Result r = host({"--plugin-dir", toyreg.string(), "--algorithm", "toyreg", "--run-dir",
                         (tmp() / "run").string(), "--plugin-allowlist", (tmp() / "allow.txt").string()});
  EXPECT_NE(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.err, "no entry for 'toyreg'")) << r.describe();
  std::error_code ec;
  EXPECT_TRUE(!fs::exists(tmp() / "run", ec) || fs::is_empty(tmp() / "run", ec)) << "the run folder was written";
}

}  // namespace
}  // namespace mlhost::cli_test
