// The worker's memory allocator, the plan's "allocator" (docs/plan.md). glibc's defaults serve
// blocks above 128 KiB to 32 MiB (its dynamic threshold) with mmap and unmap them on free, so
// a training step that allocates tens of MB of activations page-faults all of them afresh:
// ProtoNet's Conv-4 trained 3-7x slower on the development machine than with the blocks
// kept. jemalloc (preloaded into the worker, never the host) or glibc with tuned thresholds
// keeps them; which is fastest is measured by calibration.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mlhost {

// glibc, glibc-tuned, jemalloc, tcmalloc.
const std::vector<std::string>& allocator_names();

// The library file a preloaded allocator is loaded from (libjemalloc.so.2,
// libtcmalloc_minimal.so.4); empty for glibc and glibc-tuned, which need none.
std::string allocator_library_file(const std::string& name);

// The folders searched for it, in order: those of `search_path` (MLH_ALLOCATOR_PATH,
// colon-separated, e.g. a conda environment's lib), then the system's library folders
// (unless `system` is false: tests).
std::vector<std::filesystem::path> allocator_search_folders(const char* search_path, bool system = true);

// The allocator's library in those folders, or nothing when it is not installed.
std::optional<std::filesystem::path> find_allocator_library(const std::string& name, const char* search_path,
                                                            bool system = true);

// Where the worker's allocator is served from when it is missing: the next in
// `allocator_fallbacks(name)` (jemalloc: tcmalloc, then glibc-tuned) that is found.
std::vector<std::string> allocator_fallbacks(const std::string& name);

// The settings an allocator runs with unless the settings file says otherwise: for
// glibc-tuned, blocks up to glibc's largest mmap threshold (32 MiB) from the heap, and the
// heap neither trimmed nor grown in small steps; for jemalloc, freed pages kept for reuse
// (no decay). Either way resident memory levels off at the run's peak.
nlohmann::json default_allocator_settings(const std::string& name);

// The plan's "allocator" object for `name` with its default settings:
//   {"name": "jemalloc", "settings": {...}, "library": "/usr/lib/.../libjemalloc.so.2"}
// (no "library" for glibc and glibc-tuned); nothing when the library is not installed.
std::optional<nlohmann::json> allocator_object(const std::string& name, const char* search_path, bool system = true);

// True when this program runs under AddressSanitizer, which must own malloc: a preloaded
// allocator would abort the worker.
bool built_with_address_sanitizer();

}  // namespace mlhost
