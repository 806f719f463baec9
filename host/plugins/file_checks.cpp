#include "plugins/file_checks.hpp"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sys/utsname.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace mlhost {
namespace {

// ELF machine numbers of the architectures we can name (see elf.h EM_*).
std::string machine_name(uint16_t machine) {
  switch (machine) {
    case 3: return "i386";
    case 8: return "mips";
    case 20: return "ppc";
    case 21: return "ppc64";
    case 22: return "s390x";
    case 40: return "arm";
    case 62: return "x86_64";
    case 183: return "aarch64";
    case 243: return "riscv64";
    case 258: return "loongarch64";
    default: return "ELF machine " + std::to_string(machine);
  }
}

uint16_t this_machine() {
#if defined(__x86_64__)
  return 62;
#elif defined(__aarch64__)
  return 183;
#elif defined(__i386__)
  return 3;
#elif defined(__arm__)
  return 40;
#elif defined(__riscv) && __riscv_xlen == 64
  return 243;
#elif defined(__powerpc64__)
  return 21;
#elif defined(__s390x__)
  return 22;
#else
  return 0;  // unknown: skip the machine check, dlopen will still refuse
#endif
}

}  // namespace

std::string host_architecture() {
  struct utsname u {};
  if (uname(&u) == 0) return u.machine;
  return machine_name(this_machine());
}

std::optional<std::string> check_elf_library(const std::filesystem::path& library) {
  std::ifstream in(library, std::ios::binary);
  if (!in) return "cannot open library '" + library.string() + "': " + std::strerror(errno);
  std::array<unsigned char, 20> h{};
  in.read(reinterpret_cast<char*>(h.data()), h.size());
  if (in.gcount() < static_cast<std::streamsize>(h.size()) || h[0] != 0x7f || h[1] != 'E' || h[2] != 'L' ||
      h[3] != 'F')
    return "not a shared object (no ELF header): '" + library.string() + "'";
  const bool is64 = h[4] == 2;
  if (is64 != (sizeof(void*) == 8))
    return std::string("built for a ") + (is64 ? "64" : "32") + "-bit system, this host is " +
           std::to_string(sizeof(void*) * 8) + "-bit";
  const bool little = h[5] == 1;
  auto u16 = [&](int off) {
    return little ? static_cast<uint16_t>(h[off] | (h[off + 1] << 8))
                  : static_cast<uint16_t>((h[off] << 8) | h[off + 1]);
  };
  const uint16_t type = u16(16), machine = u16(18);
  if (type != 3 /* ET_DYN */)
    return "not a shared object (ELF type " + std::to_string(type) + "): '" + library.string() + "'";
  const uint16_t ours = this_machine();
  if (ours != 0 && machine != ours)
    return "wrong architecture: built for " + machine_name(machine) + ", this host is " + machine_name(ours);
  return std::nullopt;
}

std::optional<std::string> check_not_writable_by_others(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "cannot stat '" + path.string() + "': " + std::strerror(errno);
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return "unsafe permissions: '" + path.string() + "' is writable by " +
           ((st.st_mode & S_IWOTH) ? "other users" : "its group") + " (mode " + mode + ")";
  }
  return std::nullopt;
}

namespace {
std::string user_name(unsigned uid) {
  struct passwd pw {};
  struct passwd* found = nullptr;
  char buf[1024];
  if (::getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found) return std::string("'") + found->pw_name + "'";
  return "uid " + std::to_string(uid);
}
}  // namespace

std::optional<std::string> check_owner(const std::filesystem::path& path) { return check_owner(path, ::geteuid()); }

std::optional<std::string> check_owner(const std::filesystem::path& path, unsigned euid) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "cannot stat '" + path.string() + "': " + std::strerror(errno);
  if (st.st_uid == euid || st.st_uid == 0) return std::nullopt;
  return "unsafe owner: '" + path.string() + "' is owned by " + user_name(st.st_uid) + " (uid " +
         std::to_string(st.st_uid) + "), neither this user (uid " + std::to_string(euid) + ") nor root";
}

std::optional<std::string> check_link_stays_in(const std::filesystem::path& library,
                                               const std::filesystem::path& folder) {
  std::error_code ec;
  if (!std::filesystem::is_symlink(std::filesystem::symlink_status(library, ec))) return std::nullopt;
  const auto target = std::filesystem::canonical(library, ec);
  if (ec) return "library '" + library.string() + "' is a symbolic link that cannot be resolved: " + ec.message();
  const auto dir = std::filesystem::canonical(folder, ec);
  if (ec) return "cannot resolve the plugin folder '" + folder.string() + "': " + ec.message();
  if (target.parent_path() != dir)
    return "library '" + library.string() + "' is a symbolic link to '" + target.string() +
           "', outside the plugin folder '" + dir.string() + "' (plugins load only from the search path)";
  return std::nullopt;
}

}  // namespace mlhost
