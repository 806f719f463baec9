// Plugin manifests: <name>.plugin.json beside each plugin library. Listing plugins reads
// only these files, so it needs no dlopen.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mlhost {

// A manifest that cannot be used. The message names the file and the field.
class ManifestError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct PluginManifest {
  std::filesystem::path manifest_path;
  std::filesystem::path library_path;  // absolute: manifest's folder / "library"
  std::string kind;                    // "device" or "algorithm"
  std::string name;
  std::string version;
  std::string description;
  uint32_t abi_major = 0;
  uint32_t abi_minor = 0;
  std::string build_arch;                    // empty when the manifest does not say
  std::optional<std::string> torch_version;  // set for plugins built with LibTorch
  // The LibTorch device types its LibTorch runs (build.torch.backends: "cpu", "cuda", "mps";
  // from an older SDK's "cuda" flag and build system where the manifest has no list).
  std::vector<std::string> torch_backends;
  // The c10d backends its runtime was built with (build.torch.distributed: "gloo", "nccl");
  // unset where the manifest does not say (an older SDK's plugin), which refuses nothing.
  std::optional<std::vector<std::string>> torch_distributed;
  nlohmann::json build = nlohmann::json::object();  // all build facts, as written
};

// Parses and validates one manifest file. Throws ManifestError naming file and field.
PluginManifest read_manifest(const std::filesystem::path& manifest_path);

// The same from text already read (used by tests and fuzzing); `origin` names the file.
PluginManifest parse_manifest(const std::string& text, const std::filesystem::path& origin);

nlohmann::json manifest_to_json(const PluginManifest& m);

// True for names the SDK accepts: [a-z][a-z0-9_-]*, at most 64 characters.
bool is_valid_plugin_name(const std::string& name);

}  // namespace mlhost
