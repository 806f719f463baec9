// The system facts the MPS probe looks at, captured in one struct so that the probe rules
// (mps_probe.hpp) run the same on the live system and on recorded machines.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace mlh::mps {

// Raw values by name: the sysctl names below plus two for uname(2). The live reader fills
// it from the system; a recorded machine is the text `sysctl -e` prints (key=value lines,
// see tests/mps/fixtures/README.md). A key the system lacks is absent: Intel Macs have no
// hw.optional.arm64, Linux has no sysctl at all.
using SystemValues = std::map<std::string, std::string>;

namespace key {
inline constexpr const char kSysname[] = "uname.sysname";
inline constexpr const char kMachine[] = "uname.machine";
inline constexpr const char kBrand[] = "machdep.cpu.brand_string";
inline constexpr const char kMemsize[] = "hw.memsize";
inline constexpr const char kOsVersion[] = "kern.osproductversion";
inline constexpr const char kArm64[] = "hw.optional.arm64";
inline constexpr const char kPageFreeCount[] = "vm.page_free_count";
// The kernel's page size, the unit of vm.page_free_count. Not hw.pagesize: that is the
// calling process's page size, 4 KiB under Rosetta on a 16 KiB kernel.
inline constexpr const char kPageSize[] = "vm.pagesize";
}  // namespace key

struct MacSnapshot {
  std::string os;          // uname sysname: "Darwin", "Linux"; "" when unknown
  std::string machine;     // uname machine of this process: "arm64", or "x86_64" under Rosetta too
  std::string brand;       // machdep.cpu.brand_string, e.g. "Apple M2 Max"
  std::string os_version;  // kern.osproductversion, e.g. "14.5"; raw, the probe judges it
  std::optional<int64_t> memsize;          // hw.memsize, bytes
  std::optional<int64_t> arm64;            // hw.optional.arm64: 1 on Apple Silicon
  std::optional<int64_t> page_free_count;  // vm.page_free_count
  std::optional<int64_t> page_size;        // vm.pagesize, bytes
};

// Lines "key=value"; blank lines, '#' comments and lines without '=' are skipped. The
// key is trimmed, the value kept as written (snapshot_from_values trims it).
SystemValues parse_values(std::string_view text);

// Picks the values the probe needs. Strings are trimmed; a number that does not parse as
// a whole decimal integer becomes nullopt. Never throws for bad values.
MacSnapshot snapshot_from_values(const SystemValues& values);

// The live system: uname(2) everywhere, sysctlbyname(3) on macOS only.
SystemValues read_live_values();

}  // namespace mlh::mps
