// Whole-file reads of /proc and /sys, where stat() sizes are meaningless.
#pragma once

#include <optional>
#include <string>

namespace mlh::cpu {

// The file's text, or nullopt when it is missing or unreadable. Never throws for I/O.
std::optional<std::string> read_file(const std::string& path);

}  // namespace mlh::cpu
