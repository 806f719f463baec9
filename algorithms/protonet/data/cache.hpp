// The cache of decoded sets: one binary file per spec in spec.cache_dir, named by a hash of
// every spec field, stamped with a fingerprint of the source files (path, size, mtime of each),
// so a changed source triggers a rebuild. A missing, stale or corrupt cache file is never an
// error: the set is rebuilt and the file rewritten atomically (temp + rename).
//
// File layout (little-endian, as written by this host):
//   "PNDSCACH" | u32 version | u64 fingerprint | u64 source count
//   | i32 channels, height, width | u64 N | u64 class count
//   | class names (u32 length + bytes each) | N x i32 labels | N*C*H*W pixels
//   | u32 crc32 of everything before it
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "image_set.hpp"

namespace protonet {

// A file's identity for the cache: its path, size and modification time (ns).
struct SourceStamp {
  std::string path;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
};

// Stats `paths` (a missing one is a DataError naming it).
std::vector<SourceStamp> stamp_sources(const std::vector<std::string>& paths);

// Hash of the stamps (order-sensitive; loaders list sources in a deterministic order).
uint64_t fingerprint(const std::vector<SourceStamp>& stamps);

// The cache file for `spec` ("<cache_dir>/protonet-<16 hex digits>.cache").
std::string cache_path(const DatasetSpec& spec);

// The cached set if the file exists, is intact and carries `fp` / `source_count`.
std::optional<ImageSet> read_cache(const std::string& path, uint64_t fp, uint64_t source_count);

// Writes atomically, creating the folder. Throws on I/O failure (the caller decides).
void write_cache(const std::string& path, uint64_t fp, uint64_t source_count, const ImageSet& set);

// Counters for tests and logs: how load_dataset used the cache since the last reset.
struct CacheStats {
  uint64_t hits = 0;    // sets read from a cache file
  uint64_t builds = 0;  // sets decoded from the sources (with a cache_dir)
  uint64_t writes = 0;  // cache files written
  uint64_t rejected = 0;  // cache files present but stale or corrupt
};
CacheStats cache_stats();
void reset_cache_stats();

namespace detail {
void count_hit();
void count_build();
void count_write();
void count_rejected();
}  // namespace detail

}  // namespace protonet
