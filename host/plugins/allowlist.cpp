#include "plugins/allowlist.hpp"

#include <cctype>
#include <fstream>
#include <sstream>

namespace mlhost {

PluginAllowlist parse_allowlist(const std::string& text, const std::filesystem::path& file) {
  PluginAllowlist list;
  list.file = file;
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    auto fail = [&](const std::string& why) {
      throw AllowlistError("plugin allow-list '" + file.string() + "', line " + std::to_string(number) + ": " + why);
    };
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream fields(line);
    std::string digest, name, extra;
    if (!(fields >> digest)) continue;  // blank or comment only
    if (!(fields >> name)) fail("expected '<sha256>  <plugin name>', got only \"" + digest + "\"");
    if (fields >> extra) fail("expected '<sha256>  <plugin name>', got more after the name: \"" + extra + "\"");
    if (digest.size() != 64) fail("the SHA-256 must be 64 hex digits, got " + std::to_string(digest.size()) + " characters");
    for (char& c : digest) {
      if (!std::isxdigit(static_cast<unsigned char>(c))) fail("the SHA-256 has a character that is not a hex digit: '" + std::string(1, c) + "'");
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    if (name[0] == '*') name.erase(0, 1);  // sha256sum's binary-mode marker
    if (name.empty()) fail("the plugin name is empty");
    list.hashes[name].insert(digest);
  }
  return list;
}

PluginAllowlist read_allowlist(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw AllowlistError("cannot read the plugin allow-list '" + file.string() + "'");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw AllowlistError("cannot read the plugin allow-list '" + file.string() + "'");
  return parse_allowlist(text.str(), file);
}

std::string PluginAllowlist::not_listed(const std::string& name, const std::filesystem::path& library) const {
  return "not in the plugin allow-list '" + file.string() + "' (" + origin + "): no entry for '" + name +
         "' (to pin it, add '<sha256>  " + name + "' with the hash 'sha256sum " + library.string() + "' prints)";
}

std::string PluginAllowlist::refusal(const std::string& name, const std::string& sha256) const {
  const auto it = hashes.find(name);
  if (it == hashes.end()) return "not in the plugin allow-list '" + file.string() + "' (" + origin + "): no entry for '" + name + "'";
  if (it->second.count(sha256)) return {};
  std::string listed;
  for (const auto& h : it->second) listed += (listed.empty() ? "" : ", ") + h;
  return "SHA-256 mismatch: the library's SHA-256 is " + sha256 + ", the plugin allow-list '" + file.string() +
         "' (" + origin + ") pins '" + name + "' to " + listed;
}

}  // namespace mlhost
