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

// Says why `path` is unsafe to load code from because another user owns it (its owner is
// neither the effective user nor root, so that user could replace it). Nothing if safe.
// Symbolic links are followed (the target's owner counts). `euid` is for the tests.
std::optional<std::string> check_owner(const std::filesystem::path& path);
std::optional<std::string> check_owner(const std::filesystem::path& path, unsigned euid);

// For a library named by a manifest in `folder`: when it is a symbolic link whose target
// (fully resolved) is not in `folder` itself, says so; code is loaded only from the
// search path's folders. Nothing for a regular file or a link within the folder.
std::optional<std::string> check_link_stays_in(const std::filesystem::path& library,
                                               const std::filesystem::path& folder);

}  // namespace mlhost
