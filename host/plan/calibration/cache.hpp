// Calibrations kept between runs, one per algorithm and device, the batch sizes the batch
// size finder found, one per algorithm, device and config, and the training step's speed the
// device choice measured, one per algorithm, device and config, in
// $XDG_CACHE_HOME/mlhost/calibration.json (default ~/.cache/mlhost/calibration.json):
//   {"schema_version": 1, "calibrations": [<CalibrationResult::to_json()>, ...],
//    "batch_sizes": [{"key": <CalibrationKey>, "config": "<sha256 of the config>",
//                     "result": <BatchSearchResult::to_json()>, "measured_at": "..."}, ...],
//    "device_speeds": [{"key": <CalibrationKey>, "config": "<sha256 of the config and worker>",
//                       "result": {"throughput": 71000, "unit": "env_steps", "benchmark": "..."},
//                       "measured_at": "..."}, ...]}
// A result is used only for its exact key (calibration.hpp), and each key keeps its own entry
// (switching between two LibTorch builds finds each one's). Content that does not read as such
// a file is an error naming the file and the field, and nothing of it is used; the planner
// warns and measures again, and the next store replaces the file. Stores re-read the file
// under a lock (calibration.json.lock) and write it atomically, so two runs storing at once
// both keep their entries.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <vector>

#include "plan/calibration/result.hpp"
#include "plugins/manifest.hpp"
#include "probe/device.hpp"

namespace mlhost {

// The cache file for this user: $XDG_CACHE_HOME/mlhost/calibration.json, else
// $HOME/.cache/mlhost/calibration.json; empty when neither variable is set.
std::filesystem::path calibration_cache_file();

// The key a calibration of `algorithm` on `device` is cached under.
CalibrationKey calibration_key(const PluginManifest& algorithm, const Device& device);

// Now in UTC as the cache records when something was measured: "2026-11-24T09:39:31Z".
std::string utc_now();

class CalibrationCache {
 public:
  explicit CalibrationCache(std::filesystem::path file) : file_(std::move(file)) {}

  // Reads the file; a missing one is an empty cache. Throws CalibrationError naming the file.
  void load();
  // The cache in `file` for a step of planning: derived data is never a reason to stop a run,
  // so a file that cannot be trusted is a warning ("<why>: not used; <then>") and an empty
  // cache, which the next store replaces.
  static CalibrationCache load_or_empty(const std::filesystem::path& file, const std::string& then);
  // The calibration for exactly this key, if there is one.
  std::optional<CalibrationResult> find(const CalibrationKey& key) const;
  // Adds `result`, replacing one for the same key (measured again), and keeping at most
  // kKeptPerDevice entries of one algorithm and device (the most recent). Re-reads the file
  // under its lock first (a damaged file counts as empty) and writes it atomically. Throws
  // std::runtime_error naming the file.
  void store(const CalibrationResult& result);
  static constexpr size_t kKeptPerDevice = 8;

  // The batch found for this key and config (the hex SHA-256 of the config without its
  // batch size), and storing one, replacing one for the same key and config (as store()).
  struct BatchSize {
    CalibrationKey key;
    std::string config;
    nlohmann::json result;  // {"batch" >= 1, "reason", "trials", "complete"}
    std::string measured_at;
  };
  std::optional<BatchSize> find_batch_size(const CalibrationKey& key, const std::string& config) const;
  void store_batch_size(const BatchSize& entry);

  // The training step's speed on one device for one config (the device choice's figure), and
  // storing one, replacing one for the same key and config (as store()).
  struct DeviceSpeed {
    CalibrationKey key;
    std::string config;     // hex SHA-256 of the config and the worker's settings on the device
    nlohmann::json result;  // {"throughput" > 0, "unit", "benchmark"}
    std::string measured_at;
  };
  std::optional<DeviceSpeed> find_device_speed(const CalibrationKey& key, const std::string& config) const;
  void store_device_speed(const DeviceSpeed& entry);

  const std::filesystem::path& file() const { return file_; }

 private:
  void write() const;
  // Under the file's lock: re-reads the file, applies `change` and writes the result.
  void update(const std::function<void()>& change);

  std::filesystem::path file_;
  std::vector<CalibrationResult> results_;
  std::vector<BatchSize> batch_sizes_;
  std::vector<DeviceSpeed> device_speeds_;
};

}  // namespace mlhost
