#include "plan/calibration/cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>

#include <spdlog/spdlog.h>

#include "common/file_lock.hpp"
#include "common/files.hpp"

namespace mlhost {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {
constexpr int kSchemaVersion = 1;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

CalibrationKey calibration_key(const PluginManifest& algorithm, const Device& device) {
  CalibrationKey k;
  k.algorithm = algorithm.name;
  k.algorithm_version = algorithm.version;
  k.torch_version = algorithm.torch_version.value_or("");
  k.device = device.id();
  k.device_name = device.name;
  k.cores = std::max(0, device.compute_units);
  k.memory_gib = device.memory_total_bytes > 0 ? (device.memory_total_bytes + (1LL << 29)) >> 30 : 0;
  k.host_version = MLHOST_VERSION;
  return k;
}

fs::path calibration_cache_file() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return fs::path(xdg) / "mlhost" / "calibration.json";
  if (const char* home = std::getenv("HOME"); home && *home)
    return fs::path(home) / ".cache" / "mlhost" / "calibration.json";
  return {};
}

namespace {

// An entry measured for one key and config (batch_sizes, device_speeds), checked field by
// field; `check_result` checks its "result" with `fail`. `where` names it in errors.
template <typename Entry, typename CheckResult>
Entry keyed_entry_from_json(const json& j, const std::string& where, CheckResult check_result) {
  auto fail = [&](const std::string& field, const std::string& expected) {
    throw CalibrationError(where + "." + field + ": expected " + expected);
  };
  if (!j.is_object()) throw CalibrationError(where + ": expected an object");
  Entry e;
  if (!j.contains("key")) fail("key", "a value (it is missing)");
  e.key = CalibrationKey::from_json(j["key"], where + ".key");
  if (!j.value("config", json()).is_string() || j["config"].get<std::string>().size() != 64) fail("config", "a SHA-256 in hex");
  e.config = j["config"];
  const json& r = j.value("result", json());
  if (!r.is_object()) fail("result", "an object");
  check_result(r, fail);
  e.result = r;
  if (!j.value("measured_at", json()).is_string()) fail("measured_at", "a string");
  e.measured_at = j["measured_at"];
  return e;
}

template <typename Fail>
void check_batch_size_result(const json& r, Fail fail) {
  if (!r.value("batch", json()).is_number_integer() || r["batch"].get<int64_t>() < 1) fail("result.batch", "an integer >= 1");
  if (!r.value("reason", json()).is_string()) fail("result.reason", "a string");
  if (!r.value("trials", json()).is_array()) fail("result.trials", "an array");
  if (!r.value("complete", json()).is_boolean()) fail("result.complete", "true or false");
}

template <typename Fail>
void check_device_speed_result(const json& r, Fail fail) {
  if (!r.value("throughput", json()).is_number() || !(r["throughput"].get<double>() > 0))
    fail("result.throughput", "a number > 0");
  if (!r.value("unit", json()).is_string()) fail("result.unit", "a string");
  if (!r.value("benchmark", json()).is_string()) fail("result.benchmark", "a string");
}

// The entries of the list `name` (absent: none).
template <typename Entry, typename CheckResult>
std::vector<Entry> keyed_entries(const json& j, const char* name, const std::string& where, CheckResult check) {
  std::vector<Entry> out;
  if (!j.contains(name)) return out;
  if (!j[name].is_array()) throw CalibrationError(where + ": " + name + ": expected an array");
  for (size_t i = 0; i < j[name].size(); ++i)
    out.push_back(keyed_entry_from_json<Entry>(j[name][i], where + ": " + name + "[" + std::to_string(i) + "]", check));
  return out;
}

json keyed_entry_to_json(const CalibrationKey& key, const std::string& config, const json& result,
                         const std::string& measured_at) {
  return {{"key", key.to_json()}, {"config", config}, {"result", result}, {"measured_at", measured_at}};
}

}  // namespace

void CalibrationCache::load() {
  results_.clear();
  batch_sizes_.clear();
  device_speeds_.clear();
  std::error_code ec;
  if (file_.empty() || !fs::exists(file_, ec)) return;
  const std::string where = "calibration cache '" + file_.string() + "'";
  std::ifstream in(file_);
  if (!in) throw CalibrationError(where + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  const json j = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw CalibrationError(where + ": not valid JSON");
  if (!j.is_object()) throw CalibrationError(where + ": expected a JSON object");
  if (!j.contains("schema_version") || j["schema_version"] != kSchemaVersion)
    throw CalibrationError(where + ": schema_version: expected " + std::to_string(kSchemaVersion));
  if (!j.contains("calibrations") || !j["calibrations"].is_array())
    throw CalibrationError(where + ": calibrations: expected an array");
  std::vector<CalibrationResult> results;
  for (size_t i = 0; i < j["calibrations"].size(); ++i)
    results.push_back(CalibrationResult::from_json(j["calibrations"][i], where + ": calibrations[" + std::to_string(i) + "]"));
  std::vector<BatchSize> batch_sizes =
      keyed_entries<BatchSize>(j, "batch_sizes", where, [](const json& r, auto fail) { check_batch_size_result(r, fail); });
  std::vector<DeviceSpeed> device_speeds = keyed_entries<DeviceSpeed>(
      j, "device_speeds", where, [](const json& r, auto fail) { check_device_speed_result(r, fail); });
  results_ = std::move(results);
  batch_sizes_ = std::move(batch_sizes);
  device_speeds_ = std::move(device_speeds);
}

CalibrationCache CalibrationCache::load_or_empty(const fs::path& file, const std::string& then) {
  CalibrationCache cache(file);
  try {
    cache.load();
  } catch (const CalibrationError& e) {
    spdlog::warn("{}: not used; {}", e.what(), then);
    cache = CalibrationCache(file);
  }
  return cache;
}

std::optional<CalibrationCache::DeviceSpeed> CalibrationCache::find_device_speed(const CalibrationKey& key,
                                                                                 const std::string& config) const {
  for (const auto& d : device_speeds_)
    if (d.key == key && d.config == config) return d;
  return std::nullopt;
}

std::optional<CalibrationCache::BatchSize> CalibrationCache::find_batch_size(const CalibrationKey& key,
                                                                             const std::string& config) const {
  for (const auto& b : batch_sizes_)
    if (b.key == key && b.config == config) return b;
  return std::nullopt;
}

namespace {

// `entries` without the one `same` matches, with `entry` appended, and no more than `keep` of
// those `related` matches (the oldest go first: entries are kept in the order stored).
template <typename T, typename Same, typename Related>
std::vector<T> with_entry(std::vector<T> entries, const T& entry, Same same, Related related, size_t keep) {
  std::vector<T> out;
  for (T& e : entries)
    if (!same(e)) out.push_back(std::move(e));
  out.push_back(entry);
  size_t count = 0;
  for (const T& e : out) count += related(e) ? 1 : 0;
  std::vector<T> kept;
  for (T& e : out) {
    if (related(e) && count > keep) {
      --count;
      continue;
    }
    kept.push_back(std::move(e));
  }
  return kept;
}

}  // namespace

void CalibrationCache::update(const std::function<void()>& change) {
  if (file_.empty()) throw std::runtime_error("no calibration cache: neither XDG_CACHE_HOME nor HOME is set");
  std::error_code ec;
  fs::create_directories(file_.parent_path(), ec);
  if (ec) throw std::runtime_error("cannot create '" + file_.parent_path().string() + "': " + ec.message());
  FileLock lock(file_.string() + ".lock");
  try {
    load();  // what other runs stored since this one read the file
  } catch (const CalibrationError&) {
    results_.clear();  // damaged: replaced by what this store writes
    batch_sizes_.clear();
    device_speeds_.clear();
  }
  change();
  write();
}

void CalibrationCache::store_batch_size(const BatchSize& entry) {
  update([&] {
    batch_sizes_ = with_entry(
        std::move(batch_sizes_), entry, [&](const BatchSize& b) { return b.key == entry.key && b.config == entry.config; },
        [&](const BatchSize& b) { return b.key.algorithm == entry.key.algorithm && b.key.device == entry.key.device; },
        kKeptPerDevice);
  });
}

void CalibrationCache::store_device_speed(const DeviceSpeed& entry) {
  update([&] {
    device_speeds_ = with_entry(
        std::move(device_speeds_), entry,
        [&](const DeviceSpeed& d) { return d.key == entry.key && d.config == entry.config; },
        [&](const DeviceSpeed& d) { return d.key.algorithm == entry.key.algorithm && d.key.device == entry.key.device; },
        kKeptPerDevice);
  });
}

std::optional<CalibrationResult> CalibrationCache::find(const CalibrationKey& key) const {
  for (const auto& r : results_)
    if (r.key == key) return r;
  return std::nullopt;
}

void CalibrationCache::store(const CalibrationResult& result) {
  update([&] {
    results_ = with_entry(
        std::move(results_), result, [&](const CalibrationResult& r) { return r.key == result.key; },
        [&](const CalibrationResult& r) {
          return r.key.algorithm == result.key.algorithm && r.key.device == result.key.device;
        },
        kKeptPerDevice);
  });
}

void CalibrationCache::write() const {
  json calibrations = json::array(), batch_sizes = json::array(), device_speeds = json::array();
  for (const auto& r : results_) calibrations.push_back(r.to_json());
  for (const auto& b : batch_sizes_) batch_sizes.push_back(keyed_entry_to_json(b.key, b.config, b.result, b.measured_at));
  for (const auto& d : device_speeds_) device_speeds.push_back(keyed_entry_to_json(d.key, d.config, d.result, d.measured_at));
  write_file_atomically(file_, json{{"schema_version", kSchemaVersion},
                                    {"calibrations", calibrations},
                                    {"batch_sizes", batch_sizes},
                                    {"device_speeds", device_speeds}}.dump(2) + "\n");
}

}  // namespace mlhost
