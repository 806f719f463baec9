// Plugin trust: SHA-256 (FIPS 180-4 vectors), the allow-list format, ownership and
// symbolic-link checks, and how discovery applies them.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "plugins/allowlist.hpp"
#include "plugins/discovery.hpp"
#include "plugins/file_checks.hpp"
#include "plugins/sha256.hpp"
#include "test_files.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace mlhost {
namespace {

namespace fs = std::filesystem;
using testing::manifest_text;
using testing::write_text;

// --- SHA-256 -----------------------------------------------------------------------------

TEST(Sha256, NistVectors) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, IncrementalUpdatesInAnyPiecesGiveTheSameDigest) {
  std::string data;
  for (int i = 0; i < 1000; ++i) data += static_cast<char>(i * 7);
  const std::string whole = sha256_hex(data);
  for (size_t piece : {1u, 3u, 55u, 56u, 63u, 64u, 65u, 200u}) {
    Sha256 h;
    for (size_t at = 0; at < data.size(); at += piece) h.update(data.data() + at, std::min(piece, data.size() - at));
    EXPECT_EQ(to_hex(h.finish()), whole) << "pieces of " << piece;
  }
}

TEST(Sha256, FileDigestMatchesStringDigestAndMissingFileThrows) {
  TempDir t;
  write_text(t / "f", std::string(100000, 'x'));
  EXPECT_EQ(sha256_file(t / "f"), sha256_hex(std::string(100000, 'x')));
  EXPECT_THROW(sha256_file(t / "missing"), std::runtime_error);
}

// --- the allow-list format ---------------------------------------------------------------

const std::string kHashA(64, 'a');
const std::string kHashB = "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef";

TEST(Allowlist, ParsesSha256sumLinesCommentsAndBlankLines) {
  const PluginAllowlist l = parse_allowlist("# pinned plugins\n\n" + kHashA + "  cpu\n" + kHashB +
                                                " *toyreg   # binary-mode marker\n   \n" + kHashA + " toyreg\n",
                                            "/etc/allow");
  ASSERT_EQ(l.hashes.size(), 2u);
  EXPECT_EQ(l.hashes.at("cpu"), std::set<std::string>{kHashA});
  EXPECT_EQ(l.hashes.at("toyreg").size(), 2u);
  EXPECT_TRUE(l.hashes.at("toyreg").count("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"))
      << "hex is lower-cased";
  EXPECT_EQ(l.refusal("cpu", kHashA), "");
  EXPECT_NE(l.refusal("cpu", std::string(64, 'b')).find("SHA-256 mismatch"), std::string::npos);
  EXPECT_NE(l.refusal("cpu", std::string(64, 'b')).find(kHashA), std::string::npos) << "shows the pinned hash";
  EXPECT_NE(l.refusal("cpu", std::string(64, 'b')).find(std::string(64, 'b')), std::string::npos)
      << "shows the actual hash";
  EXPECT_NE(l.refusal("mps", kHashA).find("no entry for 'mps'"), std::string::npos);
  EXPECT_TRUE(l.lists("cpu"));
  EXPECT_FALSE(l.lists("mps"));
  EXPECT_NE(l.not_listed("mps", "/p/libmps.so").find("no entry for 'mps' (to pin it, add '<sha256>  mps' with the "
                                                     "hash 'sha256sum /p/libmps.so' prints)"),
            std::string::npos)
      << l.not_listed("mps", "/p/libmps.so");
}

TEST(Allowlist, MalformedLinesNameTheFileAndLine) {
  auto error = [](const std::string& text) {
    try {
      parse_allowlist(text, "/etc/allow");
    } catch (const AllowlistError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error(kHashA + "  cpu\nabc cpu\n").find("'/etc/allow', line 2: the SHA-256 must be 64 hex digits"),
            std::string::npos)
      << error(kHashA + "  cpu\nabc cpu\n");
  EXPECT_NE(error("\n" + kHashA + "\n").find("line 2: expected '<sha256>  <plugin name>'"), std::string::npos);
  EXPECT_NE(error(kHashA + " cpu extra\n").find("line 1: expected"), std::string::npos);
  EXPECT_NE(error(std::string(63, 'a') + "g cpu\n").find("not a hex digit: 'g'"), std::string::npos);
  EXPECT_NE(error(kHashA + " *\n").find("line 1: the plugin name is empty"), std::string::npos);
  EXPECT_THROW(read_allowlist("/nonexistent/allow"), AllowlistError);
}

// --- ownership and links -----------------------------------------------------------------

TEST(FileChecks, OwnerMustBeThisUserOrRoot) {
  TempDir t;
  write_text(t / "f", "x");
  EXPECT_FALSE(check_owner(t / "f").has_value()) << "our own file";
  const unsigned me = ::geteuid();
  // Seen from another user's point of view, a file we own (unless we are root) is unsafe.
  const auto other = check_owner(t / "f", me + 12345);
  if (me == 0) {
    EXPECT_FALSE(other.has_value()) << "root-owned files are always trusted";
  } else {
    ASSERT_TRUE(other.has_value());
    EXPECT_NE(other->find("unsafe owner: '" + (t / "f").string() + "' is owned by"), std::string::npos) << *other;
  }
  if (me == 0) {
    ASSERT_EQ(::chown((t / "f").c_str(), 65534, 65534), 0);
    const auto problem = check_owner(t / "f");
    ASSERT_TRUE(problem.has_value());
    EXPECT_NE(problem->find("(uid 65534), neither this user (uid 0) nor root"), std::string::npos) << *problem;
  }
  EXPECT_TRUE(check_owner(t / "missing").has_value());
}

TEST(FileChecks, LibraryLinksMayNotLeaveTheirFolder) {
  TempDir t;
  fs::create_directories(t / "plugins");
  fs::create_directories(t / "elsewhere");
  write_text(t / "plugins" / "libx.so.1", "x");
  write_text(t / "elsewhere" / "liby.so", "y");
  EXPECT_FALSE(check_link_stays_in(t / "plugins" / "libx.so.1", t / "plugins")) << "a regular file";
  fs::create_symlink("libx.so.1", t / "plugins" / "libx.so");
  EXPECT_FALSE(check_link_stays_in(t / "plugins" / "libx.so", t / "plugins")) << "a link within the folder";
  fs::create_symlink(t / "elsewhere" / "liby.so", t / "plugins" / "liby.so");
  const auto out = check_link_stays_in(t / "plugins" / "liby.so", t / "plugins");
  ASSERT_TRUE(out.has_value());
  EXPECT_NE(out->find("outside the plugin folder"), std::string::npos) << *out;
  fs::create_symlink("../elsewhere/liby.so", t / "plugins" / "libz.so");
  EXPECT_TRUE(check_link_stays_in(t / "plugins" / "libz.so", t / "plugins").has_value());
  fs::create_symlink("missing.so", t / "plugins" / "libdangling.so");
  EXPECT_TRUE(check_link_stays_in(t / "plugins" / "libdangling.so", t / "plugins").has_value());
}

// --- discovery with the rules ------------------------------------------------------------

fs::path make_plugin(const fs::path& dir, const std::string& name) {
  fs::create_directories(dir);
  ::chmod(dir.c_str(), 0755);
  const std::string lib = "libmlhost-" + name + ".so";
  fs::copy_file(MLH_TEST_CPU_PLUGIN, dir / lib, fs::copy_options::overwrite_existing);
  ::chmod((dir / lib).c_str(), 0755);
  write_text(dir / (name + ".plugin.json"), manifest_text(name, lib));
  ::chmod((dir / (name + ".plugin.json")).c_str(), 0644);
  return dir / lib;
}

DiscoveryOptions only(const fs::path& dir) {
  DiscoveryOptions o;
  o.plugin_dirs = {dir};
  o.use_default_dir = false;
  return o;
}

TEST(DiscoveryTrust, AllowListPinsLibrariesBySha256) {
  TempDir t;
  const fs::path lib = make_plugin(t / "p", "cpu");
  make_plugin(t / "p", "other");
  const std::string digest = sha256_file(lib);
  DiscoveryOptions o = only(t / "p");

  Discovery d = discover_plugins(o);
  ASSERT_EQ(d.plugins.size(), 2u);
  EXPECT_FALSE(d.plugins[0].sha256.has_value()) << "no hashing without an allow-list";

  o.allowlist = parse_allowlist(digest + "  cpu\n" + kHashA + "  other\n", t / "allow");
  o.allowlist->origin = "--plugin-allowlist";
  d = discover_plugins(o);
  const DiscoveredPlugin* cpu = d.find_any("device", "cpu");
  const DiscoveredPlugin* other = d.find_any("device", "other");
  ASSERT_TRUE(cpu && other);
  EXPECT_TRUE(cpu->usable()) << cpu->refused.value_or("");
  EXPECT_EQ(cpu->sha256.value_or(""), digest);
  ASSERT_FALSE(other->usable());
  EXPECT_NE(other->refused->find("SHA-256 mismatch"), std::string::npos) << *other->refused;

  o.allowlist = parse_allowlist(digest + "  other\n", t / "allow");
  d = discover_plugins(o);
  ASSERT_FALSE(d.find_any("device", "cpu")->usable());
  EXPECT_NE(d.find_any("device", "cpu")->refused->find("no entry for 'cpu'"), std::string::npos);
  EXPECT_FALSE(d.find_any("device", "cpu")->sha256.has_value()) << "an unlisted library is not read";
  EXPECT_TRUE(d.find_any("device", "other")->usable()) << "same bytes, so the same hash";

  // --allow-unsafe-plugins does not lift the allow-list.
  o.allow_unsafe = true;
  EXPECT_FALSE(discover_plugins(o).find_any("device", "cpu")->usable());
}

TEST(DiscoveryTrust, LibraryLinkOutOfTheFolderIsRefusedEvenWithAllowUnsafe) {
  TempDir t;
  const fs::path real = make_plugin(t / "real", "cpu");
  fs::create_directories(t / "p");
  ::chmod((t / "p").c_str(), 0755);
  write_text(t / "p" / "linked.plugin.json", manifest_text("linked", "liblinked.so"));
  fs::create_symlink(real, t / "p" / "liblinked.so");
  DiscoveryOptions o = only(t / "p");
  o.allow_unsafe = true;
  const Discovery d = discover_plugins(o);
  ASSERT_EQ(d.plugins.size(), 1u);
  ASSERT_FALSE(d.plugins[0].usable());
  EXPECT_NE(d.plugins[0].refused->find("is a symbolic link to '" + fs::canonical(real).string() + "'"),
            std::string::npos)
      << *d.plugins[0].refused;
  // A link to a file in the same folder is fine (libfoo.so -> libfoo.so.1).
  fs::rename(real, t / "p" / "liblinked.so.1");
  fs::remove(t / "p" / "liblinked.so");
  fs::create_symlink("liblinked.so.1", t / "p" / "liblinked.so");
  const Discovery d2 = discover_plugins(o);
  EXPECT_TRUE(d2.plugins[0].usable()) << d2.plugins[0].refused.value_or("");
}

TEST(DiscoveryTrust, FilesOwnedByAnotherUserAreRefusedUnlessAllowed) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a file to another user (uid 65534)";
  for (const char* which : {"folder", "manifest", "library"}) {
    TempDir t;
    const fs::path lib = make_plugin(t / "p", "cpu");
    const fs::path target = std::string(which) == "folder"     ? t / "p"
                            : std::string(which) == "manifest" ? t / "p" / "cpu.plugin.json"
                                                               : lib;
    ASSERT_EQ(::chown(target.c_str(), 65534, 65534), 0);
    DiscoveryOptions o = only(t / "p");
    Discovery d = discover_plugins(o);
    ASSERT_EQ(d.plugins.size(), 1u);
    ASSERT_FALSE(d.plugins[0].usable()) << which;
    EXPECT_NE(d.plugins[0].refused->find("unsafe owner: '" + target.string() + "' is owned by"), std::string::npos)
        << *d.plugins[0].refused;
    EXPECT_NE(d.plugins[0].refused->find("uid 65534"), std::string::npos) << *d.plugins[0].refused;
    o.allow_unsafe = true;
    d = discover_plugins(o);
    EXPECT_TRUE(d.plugins[0].usable()) << which;
    ASSERT_EQ(d.plugins[0].warnings.size(), 1u);
    EXPECT_NE(d.plugins[0].warnings[0].find("allowed by --allow-unsafe-plugins"), std::string::npos);
  }
}

}  // namespace
}  // namespace mlhost
