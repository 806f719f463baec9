// What /proc/cpuinfo says: per-processor fields, the model and vendor names, and the ISA
// features that matter for training.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlh::cpu {

// One block of "key : value" lines.
using CpuinfoBlock = std::map<std::string, std::string, std::less<>>;

struct Cpuinfo {
  std::vector<CpuinfoBlock> blocks;              // in file order
  std::map<int, size_t> processors;              // "processor" number -> index in blocks
};

Cpuinfo parse_cpuinfo(std::string_view text);

// The value of `key` in the first block that has it.
std::optional<std::string> first_value(const Cpuinfo& info, std::string_view key);

// An integer field of one block.
std::optional<int64_t> int_value(const CpuinfoBlock& block, std::string_view key);

// x86: "model name" with runs of spaces collapsed. ARM: the core names from implementer
// and part codes, joined by " + " on big.LITTLE chips. Empty when unknown.
std::string model_name(const Cpuinfo& info);

// x86 vendor_id ("GenuineIntel", "AuthenticAMD") or the ARM implementer's name.
std::string vendor_name(const Cpuinfo& info);

// The training-relevant subset of the ISA flags, lower-case as cpuinfo writes them, in a
// fixed order. x86: sse4_2 ... amx_int8; ARM: neon (from asimd), asimdhp, sve, sve2, bf16,
// i8mm.
std::vector<std::string> training_features(const Cpuinfo& info);

}  // namespace mlh::cpu
