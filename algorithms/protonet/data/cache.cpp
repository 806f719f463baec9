#include "cache.hpp"

#include <sys/stat.h>
#include <zlib.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mlh/atomic_file.hpp>

namespace protonet {
namespace {

constexpr char kMagic[8] = {'P', 'N', 'D', 'S', 'C', 'A', 'C', 'H'};
// Bump when the layout or the decoding (resize filter, rotation) changes, so old files
// are rebuilt rather than trusted.
constexpr uint32_t kVersion = 1;

struct Counters {
  std::atomic<uint64_t> hits{0}, builds{0}, writes{0}, rejected{0};
};
Counters& counters() {
  static Counters c;
  return c;
}

// FNV-1a, 64 bit: enough to name a file and to notice a changed fingerprint.
struct Fnv {
  uint64_t h = 0xcbf29ce484222325ULL;
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001b3ULL;
  }
  void u64(uint64_t v) { bytes(&v, sizeof v); }
  // Length-prefixed so that ("ab","c") and ("a","bc") differ.
  void str(const std::string& s) {
    u64(s.size());
    bytes(s.data(), s.size());
  }
};

template <typename T>
void put(std::vector<uint8_t>& out, const T& v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out.insert(out.end(), p, p + sizeof v);
}

// A bounds-checked reader over the file's bytes; any overrun marks the file corrupt.
struct Reader {
  const uint8_t* p;
  size_t left;
  bool ok = true;
  template <typename T>
  T get() {
    T v{};
    if (left < sizeof v) {
      ok = false;
      return v;
    }
    std::memcpy(&v, p, sizeof v);
    p += sizeof v;
    left -= sizeof v;
    return v;
  }
  const uint8_t* take(size_t n) {
    if (left < n) {
      ok = false;
      return nullptr;
    }
    const uint8_t* r = p;
    p += n;
    left -= n;
    return r;
  }
};

}  // namespace

std::vector<SourceStamp> stamp_sources(const std::vector<std::string>& paths) {
  std::vector<SourceStamp> out;
  out.reserve(paths.size());
  for (const std::string& path : paths) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) throw DataError("cannot stat '" + path + "': " + std::strerror(errno));
    out.push_back({path, static_cast<uint64_t>(st.st_size),
                   static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec});
  }
  return out;
}

uint64_t fingerprint(const std::vector<SourceStamp>& stamps) {
  Fnv f;
  f.u64(stamps.size());
  for (const SourceStamp& s : stamps) {
    f.str(s.path);
    f.u64(s.size);
    f.u64(static_cast<uint64_t>(s.mtime_ns));
  }
  return f.h;
}

std::string cache_path(const DatasetSpec& spec) {
  Fnv f;
  f.u64(kVersion);
  for (const std::string* s : {&spec.format, &spec.root, &spec.labels, &spec.split, &spec.splits, &spec.split_file, &spec.cache_dir})
    f.str(*s);
  f.u64(spec.classes.size());
  for (int32_t c : spec.classes) f.u64(static_cast<uint64_t>(static_cast<int64_t>(c)));
  for (int v : {spec.height, spec.width, spec.channels, int(spec.invert), int(spec.rotations)})
    f.u64(static_cast<uint64_t>(static_cast<int64_t>(v)));
  char name[64];
  std::snprintf(name, sizeof name, "protonet-%016llx.cache", static_cast<unsigned long long>(f.h));
  return spec.cache_dir + "/" + name;
}

std::optional<ImageSet> read_cache(const std::string& path, uint64_t fp, uint64_t source_count) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;  // no cache yet
  const auto reject = [] {
    counters().rejected++;
    return std::nullopt;
  };
  in.seekg(0, std::ios::end);
  const std::streamoff length = in.tellg();
  in.seekg(0, std::ios::beg);
  if (length < 0) return reject();
  std::vector<uint8_t> data(static_cast<size_t>(length));
  if (!in.read(reinterpret_cast<char*>(data.data()), length)) return reject();
  if (data.size() < sizeof kMagic + 4 || std::memcmp(data.data(), kMagic, sizeof kMagic) != 0) return reject();
  // The checksum covers everything, so a flipped bit anywhere reads as a miss.
  uint32_t stored_crc;
  std::memcpy(&stored_crc, data.data() + data.size() - 4, 4);
  if (crc32_z(0, data.data(), data.size() - 4) != stored_crc) return reject();

  Reader r{data.data() + sizeof kMagic, data.size() - sizeof kMagic - 4};
  if (r.get<uint32_t>() != kVersion) return reject();
  if (r.get<uint64_t>() != fp || r.get<uint64_t>() != source_count) return reject();
  ImageSet set;
  set.channels = r.get<int32_t>();
  set.height = r.get<int32_t>();
  set.width = r.get<int32_t>();
  const uint64_t n = r.get<uint64_t>(), nclasses = r.get<uint64_t>();
  if (!r.ok || set.channels <= 0 || set.height <= 0 || set.width <= 0 || nclasses > r.left || n > r.left)
    return reject();
  for (uint64_t k = 0; k < nclasses; ++k) {
    const uint32_t len = r.get<uint32_t>();
    const uint8_t* s = r.take(len);
    if (!r.ok) return reject();
    set.class_names.emplace_back(reinterpret_cast<const char*>(s), len);
  }
  const uint8_t* labels = r.take(n * sizeof(int32_t));
  if (!r.ok || set.image_bytes() == 0 || r.left / set.image_bytes() != n || r.left % set.image_bytes() != 0)
    return reject();
  set.labels.resize(n);
  std::memcpy(set.labels.data(), labels, n * sizeof(int32_t));
  for (int32_t l : set.labels)
    if (l < 0 || static_cast<uint64_t>(l) >= nclasses) return reject();
  set.pixels.assign(r.p, r.p + r.left);
  return set;
}

void write_cache(const std::string& path, uint64_t fp, uint64_t source_count, const ImageSet& set) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::vector<uint8_t> head;
  head.insert(head.end(), kMagic, kMagic + sizeof kMagic);
  put(head, kVersion);
  put(head, fp);
  put(head, source_count);
  put(head, static_cast<int32_t>(set.channels));
  put(head, static_cast<int32_t>(set.height));
  put(head, static_cast<int32_t>(set.width));
  put(head, static_cast<uint64_t>(set.size()));
  put(head, static_cast<uint64_t>(set.class_names.size()));
  for (const std::string& name : set.class_names) {
    put(head, static_cast<uint32_t>(name.size()));
    head.insert(head.end(), name.begin(), name.end());
  }
  uint32_t crc = crc32_z(0, head.data(), head.size());
  crc = crc32_z(crc, reinterpret_cast<const uint8_t*>(set.labels.data()), set.labels.size() * sizeof(int32_t));
  crc = crc32_z(crc, set.pixels.data(), set.pixels.size());

  mlh::AtomicFile file(path);
  file.write(head.data(), head.size());
  file.write(set.labels.data(), set.labels.size() * sizeof(int32_t));
  file.write(set.pixels.data(), set.pixels.size());
  file.write(&crc, sizeof crc);
  file.commit();
  counters().writes++;
}

CacheStats cache_stats() {
  Counters& c = counters();
  return {c.hits.load(), c.builds.load(), c.writes.load(), c.rejected.load()};
}

void reset_cache_stats() {
  Counters& c = counters();
  c.hits = c.builds = c.writes = c.rejected = 0;
}

namespace detail {
void count_hit() { counters().hits++; }
void count_build() { counters().builds++; }
void count_write() { counters().writes++; }
void count_rejected() { counters().rejected++; }
}  // namespace detail

}  // namespace protonet
