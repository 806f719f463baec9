#include "cpu_arm.hpp"

#include <charconv>
#include <optional>

#include "cpu_text.hpp"

namespace mlh::cpu {
namespace {

struct Vendor {
  int implementer;
  const char* name;
};

// JEDEC-assigned implementer codes of the vendors whose chips run training jobs.
constexpr Vendor kVendors[] = {
    {0x41, "ARM"},     {0x42, "Broadcom"},  {0x43, "Cavium"}, {0x46, "Fujitsu"},
    {0x48, "HiSilicon"}, {0x4e, "NVIDIA"},  {0x50, "APM"},    {0x51, "Qualcomm"},
    {0x61, "Apple"},   {0x6d, "Microsoft"}, {0xc0, "Ampere"},
};

struct Part {
  int implementer;
  int part;
  const char* name;
};

// Server cores first (what clusters run), then common client cores.
constexpr Part kParts[] = {
    {0x41, 0xd0c, "Neoverse-N1"}, {0x41, 0xd40, "Neoverse-V1"}, {0x41, 0xd49, "Neoverse-N2"},
    {0x41, 0xd4f, "Neoverse-V2"}, {0x41, 0xd84, "Neoverse-V3"}, {0x41, 0xd8e, "Neoverse-N3"},
    {0x41, 0xd03, "Cortex-A53"},  {0x41, 0xd05, "Cortex-A55"},  {0x41, 0xd07, "Cortex-A57"},
    {0x41, 0xd08, "Cortex-A72"},  {0x41, 0xd0b, "Cortex-A76"},  {0x41, 0xd41, "Cortex-A78"},
    {0x41, 0xd47, "Cortex-A710"}, {0x41, 0xd44, "Cortex-X1"},   {0x41, 0xd48, "Cortex-X2"},
    {0x43, 0x0af, "ThunderX2"},   {0x46, 0x001, "A64FX"},       {0x48, 0xd01, "Kunpeng-920"},
    {0x4e, 0x004, "Carmel"},      {0x51, 0x001, "Oryon"},       {0x6d, 0xd49, "Azure Cobalt 100"},
    {0xc0, 0xac3, "AmpereOne"},
    // Apple's efficiency and performance cores have separate codes for the same chip.
    {0x61, 0x022, "Apple M1"},    {0x61, 0x023, "Apple M1"},    {0x61, 0x024, "Apple M1 Pro"},
    {0x61, 0x025, "Apple M1 Pro"}, {0x61, 0x028, "Apple M1 Max"}, {0x61, 0x029, "Apple M1 Max"},
    {0x61, 0x032, "Apple M2"},    {0x61, 0x033, "Apple M2"},
};

std::optional<int> parse_hex(std::string_view s) {
  s = trim(s);
  if (s.size() < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return std::nullopt;
  int value = 0;
  auto [end, ec] = std::from_chars(s.data() + 2, s.data() + s.size(), value, 16);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

}  // namespace

std::string arm_vendor(std::string_view implementer) {
  std::optional<int> code = parse_hex(implementer);
  for (const Vendor& v : kVendors)
    if (code == v.implementer) return v.name;
  return "implementer " + std::string(trim(implementer));
}

std::string arm_model(std::string_view implementer, std::string_view part) {
  std::optional<int> vendor_code = parse_hex(implementer), part_code = parse_hex(part);
  for (const Part& p : kParts)
    if (vendor_code == p.implementer && part_code == p.part) return p.name;
  return "ARM CPU (implementer " + std::string(trim(implementer)) + " part " + std::string(trim(part)) + ")";
}

}  // namespace mlh::cpu
