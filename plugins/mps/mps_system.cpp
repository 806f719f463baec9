// Reads the live SystemValues: uname(2) on every system, sysctlbyname(3) on macOS. The
// plugin must load and answer everywhere, so nothing here is Apple-only outside the
// #ifdef, and no Apple framework (Metal, IOKit) is linked: a sysctl costs microseconds.
#include <sys/utsname.h>

#ifdef __APPLE__
#include <sys/sysctl.h>
#endif

#include <cstring>

#include "mps_snapshot.hpp"

namespace mlh::mps {
namespace {

#ifdef __APPLE__

void put_text(SystemValues& values, const char* name) {
  size_t size = 0;
  if (::sysctlbyname(name, nullptr, &size, nullptr, 0) != 0 || size == 0) return;
  std::string value(size, '\0');
  if (::sysctlbyname(name, value.data(), &size, nullptr, 0) != 0) return;
  value.resize(::strnlen(value.c_str(), size));  // the kernel counts the terminating NUL
  values[name] = value;
}

// Integer sysctls are 4 or 8 bytes wide depending on the key (and, for some keys, the
// macOS release), so the width the kernel answers with decides how to read them.
void put_number(SystemValues& values, const char* name) {
  unsigned char buffer[8] = {};
  size_t size = sizeof buffer;
  if (::sysctlbyname(name, buffer, &size, nullptr, 0) != 0) return;
  if (size == sizeof(uint32_t)) {
    uint32_t n = 0;
    std::memcpy(&n, buffer, sizeof n);
    values[name] = std::to_string(n);
  } else if (size == sizeof(int64_t)) {
    int64_t n = 0;
    std::memcpy(&n, buffer, sizeof n);
    values[name] = std::to_string(n);
  }
}

#endif

}  // namespace

SystemValues read_live_values() {
  SystemValues values;
  utsname names{};
  if (::uname(&names) == 0) {
    values[key::kSysname] = names.sysname;
    values[key::kMachine] = names.machine;
  }
#ifdef __APPLE__
  put_text(values, key::kBrand);
  put_text(values, key::kOsVersion);
  put_number(values, key::kMemsize);
  put_number(values, key::kArm64);
  put_number(values, key::kPageFreeCount);
  put_number(values, key::kPageSize);
#endif
  return values;
}

}  // namespace mlh::mps
