#include "cpu_cpuinfo.hpp"

#include <algorithm>

#include "cpu_arm.hpp"
#include "cpu_text.hpp"

namespace mlh::cpu {
namespace {

constexpr const char* kX86Features[] = {
    "sse4_2",      "avx",         "avx2",        "fma",      "avx512f",  "avx512bw", "avx512vl", "avx512_vnni",
    "avx512_bf16", "avx512_fp16", "amx_tile",    "amx_bf16", "amx_int8", "amx_fp16",
};

// arm64 calls NEON "asimd"; 32-bit ARM kernels call it "neon".
struct ArmFeature {
  const char* flag;
  const char* name;
};
constexpr ArmFeature kArmFeatures[] = {
    {"asimd", "neon"}, {"neon", "neon"}, {"asimdhp", "asimdhp"}, {"sve", "sve"},
    {"sve2", "sve2"},  {"bf16", "bf16"}, {"i8mm", "i8mm"},
};

std::string collapse_spaces(std::string_view s) {
  std::string out;
  for (std::string_view word : words(s)) {
    if (!out.empty()) out += ' ';
    out += word;
  }
  return out;
}

}  // namespace

Cpuinfo parse_cpuinfo(std::string_view text) {
  Cpuinfo info;
  info.blocks.emplace_back();
  for (std::string_view line : split(text, '\n')) {
    size_t colon = line.find(':');
    if (trim(line).empty()) {
      if (!info.blocks.back().empty()) info.blocks.emplace_back();
    } else if (colon != std::string_view::npos) {
      info.blocks.back().emplace(trim(line.substr(0, colon)), trim(line.substr(colon + 1)));
    }
  }
  if (info.blocks.back().empty()) info.blocks.pop_back();
  for (size_t i = 0; i < info.blocks.size(); ++i) {
    std::optional<int64_t> number = int_value(info.blocks[i], "processor");
    if (number && *number >= 0 && *number <= 65535) info.processors.emplace(static_cast<int>(*number), i);
  }
  return info;
}

std::optional<std::string> first_value(const Cpuinfo& info, std::string_view key) {
  for (const CpuinfoBlock& block : info.blocks) {
    auto it = block.find(key);
    if (it != block.end()) return it->second;
  }
  return std::nullopt;
}

std::optional<int64_t> int_value(const CpuinfoBlock& block, std::string_view key) {
  auto it = block.find(key);
  return it == block.end() ? std::nullopt : parse_int(it->second);
}

std::string model_name(const Cpuinfo& info) {
  // Checked first because 32-bit ARM kernels also write a vague "model name"
  // ("ARMv7 Processor rev 4 (v7l)") that the part code improves on.
  if (first_value(info, "CPU implementer")) {
    std::vector<std::string> names;
    for (const CpuinfoBlock& block : info.blocks) {
      auto implementer = block.find("CPU implementer"), part = block.find("CPU part");
      if (implementer == block.end() || part == block.end()) continue;
      std::string name = arm_model(implementer->second, part->second);
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
    std::string joined;
    for (const std::string& name : names) joined += (joined.empty() ? "" : " + ") + name;
    if (!joined.empty()) return joined;
  }
  return collapse_spaces(first_value(info, "model name").value_or(""));
}

std::string vendor_name(const Cpuinfo& info) {
  if (std::optional<std::string> vendor = first_value(info, "vendor_id")) return *vendor;
  if (std::optional<std::string> implementer = first_value(info, "CPU implementer")) return arm_vendor(*implementer);
  return {};
}

std::vector<std::string> training_features(const Cpuinfo& info) {
  std::vector<std::string> out;
  if (std::optional<std::string> x86_flags = first_value(info, "flags")) {
    std::vector<std::string_view> present = words(*x86_flags);
    for (const char* feature : kX86Features)
      if (std::find(present.begin(), present.end(), feature) != present.end()) out.push_back(feature);
  } else if (std::optional<std::string> arm_flags = first_value(info, "Features")) {
    std::vector<std::string_view> present = words(*arm_flags);
    for (const ArmFeature& f : kArmFeatures) {
      bool has = std::find(present.begin(), present.end(), f.flag) != present.end();
      if (has && std::find(out.begin(), out.end(), f.name) == out.end()) out.push_back(f.name);
    }
  }
  return out;
}

}  // namespace mlh::cpu
