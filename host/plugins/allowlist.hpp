// The plugin allow-list (--plugin-allowlist FILE, or $MLH_PLUGIN_ALLOWLIST): pins plugins by
// the SHA-256 of their library. One entry a line, as sha256sum prints them:
//
//   # comment (also after an entry)
//   <64 hex digits>  <plugin name>
//
// A name may be listed with several hashes (e.g. two builds); hex is case-insensitive. With
// an allow-list in force, a plugin is loadable only if its library's hash is listed under its
// name (discovery.cpp).
#pragma once

#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

namespace mlhost {

// A malformed or unreadable allow-list; the message names the file and line.
class AllowlistError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct PluginAllowlist {
  std::filesystem::path file;
  std::string origin;                                   // "--plugin-allowlist" or "MLH_PLUGIN_ALLOWLIST"
  std::map<std::string, std::set<std::string>> hashes;  // plugin name -> lower-case hex SHA-256s

  bool lists(const std::string& name) const { return hashes.count(name) > 0; }
  // Why a plugin named `name` (library `library`) is not allowed because the list has no
  // entry for it. Needs no hash: unlisted libraries are never read.
  std::string not_listed(const std::string& name, const std::filesystem::path& library) const;
  // Why a listed plugin whose library hashes to `sha256` is not allowed; empty if it is.
  std::string refusal(const std::string& name, const std::string& sha256) const;
};

// Parses allow-list text; `file` names it in errors. Throws AllowlistError.
PluginAllowlist parse_allowlist(const std::string& text, const std::filesystem::path& file);
// Reads and parses a file. Throws AllowlistError.
PluginAllowlist read_allowlist(const std::filesystem::path& file);

}  // namespace mlhost
