// Checks on plugin files made before any code is loaded from them.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace mlhost {

// The architecture this host runs on, as CMake and uname name it ("x86_64", "aarch64").
std::string host_architecture();

// Reads the ELF header of `library` and says why it cannot be loaded by this host
// ("not a shared object (no ELF header)", "built for aarch64, this host is x86_64", ...),
// or nothing when it looks loadable.
std::optional<std::string> check_elf_library(const std::filesystem::path& library);

// Says why `path` is unsafe to load code from: it (or, for a directory, its content) can
// be replaced by another user because it is writable by group or others. Nothing if safe.
std::optional<std::string> check_not_writable_by_others(const std::filesystem::path& path);

}  // namespace mlhost
