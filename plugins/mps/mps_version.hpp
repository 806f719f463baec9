// macOS product versions ("12.3", "12.3.1", "15"), as kern.osproductversion reports them.
#pragma once

#include <optional>
#include <string_view>

namespace mlh::mps {

struct MacosVersion {
  int major = 0;
  int minor = 0;
  int patch = 0;
};

// One to three dot-separated decimal numbers; missing parts are 0 ("15" is 15.0.0).
// nullopt for anything else ("", "garbage", "12.", " 12.3", "1.2.3.4").
std::optional<MacosVersion> parse_macos_version(std::string_view text);

// True when `v` is major.minor or later.
bool at_least(const MacosVersion& v, int major, int minor);

}  // namespace mlh::mps
