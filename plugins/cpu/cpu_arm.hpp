// Names for ARM cores. arm64 kernels print no model name in /proc/cpuinfo, only the
// "CPU implementer" and "CPU part" codes (e.g. "0x41", "0xd40"); these turn them into
// the names people know.
#pragma once

#include <string>
#include <string_view>

namespace mlh::cpu {

// "ARM", "Apple", "Ampere", ...; "implementer 0x99" for codes not in the table.
std::string arm_vendor(std::string_view implementer);

// "Neoverse-V1", "Apple M1", ...; "ARM CPU (implementer 0x41 part 0xd99)" otherwise.
std::string arm_model(std::string_view implementer, std::string_view part);

}  // namespace mlh::cpu
