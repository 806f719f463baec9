#include "plan/allocator.hpp"

#include <mlh/plan_setting_check.hpp>

#include <system_error>

namespace mlhost {

namespace fs = std::filesystem;
using nlohmann::json;

const std::vector<std::string>& allocator_names() {
  static const std::vector<std::string> names = mlh::plan_setting_choices(mlh::plan_setting("allocator"));
  return names;
}

std::string allocator_library_file(const std::string& name) {
  if (name == "jemalloc") return "libjemalloc.so.2";            // Debian: libjemalloc2
  if (name == "tcmalloc") return "libtcmalloc_minimal.so.4";   // Debian: libtcmalloc-minimal4
  return "";
}

std::vector<fs::path> allocator_search_folders(const char* search_path, bool system) {
  std::vector<fs::path> folders;
  if (search_path) {
    const std::string text = search_path;
    for (size_t start = 0; start <= text.size();) {
      const size_t colon = text.find(':', start);
      const std::string folder = text.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
      if (!folder.empty()) folders.emplace_back(folder);
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  }
  if (!system) return folders;
#if defined(__x86_64__)
  const char* multiarch = "x86_64-linux-gnu";
#elif defined(__aarch64__)
  const char* multiarch = "aarch64-linux-gnu";
#else
  const char* multiarch = "";
#endif
  for (const char* base : {"/usr/lib", "/lib"})
    if (*multiarch) folders.push_back(fs::path(base) / multiarch);
  for (const char* folder : {"/usr/lib64", "/usr/lib", "/usr/local/lib"}) folders.emplace_back(folder);
  return folders;
}

std::optional<fs::path> find_allocator_library(const std::string& name, const char* search_path, bool system) {
  const std::string file = allocator_library_file(name);
  if (file.empty()) return std::nullopt;
  for (const fs::path& folder : allocator_search_folders(search_path, system)) {
    std::error_code ec;
    const fs::path candidate = folder / file;
    if (fs::is_regular_file(candidate, ec)) return fs::absolute(candidate, ec);
  }
  return std::nullopt;
}

std::vector<std::string> allocator_fallbacks(const std::string& name) {
  if (name == "jemalloc") return {"tcmalloc", "glibc-tuned"};
  if (name == "tcmalloc") return {"jemalloc", "glibc-tuned"};
  return {};
}

json default_allocator_settings(const std::string& name) {
  if (name == "glibc-tuned")
    return {{"mmap_threshold", 32LL << 20}, {"trim_threshold", 4LL << 30}, {"top_pad", 512LL << 20}};
  // Without decay: jemalloc's default purges freed pages back to the OS over about 10 s,
  // with a background thread or not, and a training step that frees and reallocates its
  // activations then page-faults them again (ProtoNet trained at half the speed here).
  // Resident memory stays at the run's peak instead of shrinking between steps.
  if (name == "jemalloc") return {{"conf", "dirty_decay_ms:-1,muzzy_decay_ms:-1"}};
  return json::object();
}

std::optional<json> allocator_object(const std::string& name, const char* search_path, bool system) {
  json object = {{"name", name}, {"settings", default_allocator_settings(name)}};
  if (allocator_library_file(name).empty()) return object;
  const std::optional<fs::path> library = find_allocator_library(name, search_path, system);
  if (!library) return std::nullopt;
  object["library"] = library->string();
  return object;
}

bool built_with_address_sanitizer() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

}  // namespace mlhost
