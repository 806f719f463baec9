// Calibration: the plan's allocator, intra-op threads and precision chosen by measuring the
// algorithm's training step on this machine (docs/plan.md, "Calibration"), where a table of
// rules cannot know the answer. This file holds what a calibration is and how its winner is
// picked; search.hpp runs the measurements, cache.hpp keeps the results, lookup.hpp and
// batch_search.hpp are the planner's steps that use them.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mlhost {

// A calibration cache or result that cannot be trusted; the message names the file and field.
class CalibrationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What a calibration is valid for: this machine's device as probed, this algorithm plugin and
// LibTorch, this host, and the workload of the run's config. Any difference means the figures
// may no longer hold: calibrate again.
struct CalibrationKey {
  std::string algorithm, algorithm_version, torch_version;
  std::string device, device_name;  // "cpu:0", "AMD EPYC 9R14"
  int64_t cores = 0;                // the device's compute units (CPU: the usable cores)
  int64_t memory_gib = 0;           // its memory, rounded to whole GiB
  std::string host_version;
  // The hex SHA-256 of the config's step workload (workload.hpp); empty where the entry is
  // kept per config anyway (batch sizes, device speeds).
  std::string workload;

  nlohmann::json to_json() const;
  // Strict; throws CalibrationError naming `where` and the field.
  static CalibrationKey from_json(const nlohmann::json& j, const std::string& where);
  bool operator==(const CalibrationKey& other) const { return to_json() == other.to_json(); }
};

// One candidate: what the worker ran with.
struct CalibrationSettings {
  std::string allocator;  // glibc, glibc-tuned, jemalloc, tcmalloc
  int threads = 1;        // intra-op
  std::string precision;  // fp32, bf16, fp16

  nlohmann::json to_json() const;
  std::string describe() const;  // "jemalloc, 2 threads, fp32"
  bool operator==(const CalibrationSettings& o) const {
    return allocator == o.allocator && threads == o.threads && precision == o.precision;
  }
};

struct CalibrationMeasurement {
  CalibrationSettings settings;
  double throughput = 0;  // items per second of the algorithm's unit
};

struct CalibrationResult {
  CalibrationKey key;
  std::string benchmark;  // the algorithm's name for what it timed, e.g. "train_step"
  std::string unit;       // what its throughput counts, e.g. "episodes"
  std::vector<CalibrationMeasurement> measurements;  // in the order measured
  CalibrationSettings chosen;
  // What was searched (allocator, threads, precision); the rest of `chosen` is what the plan
  // had anyway, and the plan takes only the searched fields from a calibration.
  std::vector<std::string> varied;
  bool varies(const std::string& field) const;
  // The algorithm's reduced-precision check, when one ran (mlh/runtime/calibration.hpp).
  nlohmann::json precision_check;  // null when none ran
  bool complete = true;            // false: the time bound stopped it before every candidate ran
  double seconds = 0;              // how long it took
  std::string measured_at;         // UTC, ISO 8601

  std::optional<double> throughput_of(const CalibrationSettings& settings) const;
  // The measurement with glibc's defaults and the other settings as chosen (the figure
  // every choice is compared against in the plan), else the first one.
  const CalibrationMeasurement* glibc_reference() const;

  nlohmann::json to_json() const;
  // Strict: every field present and of its kind, the chosen settings among the measured ones.
  // Throws CalibrationError naming `where` and the field.
  static CalibrationResult from_json(const nlohmann::json& j, const std::string& where);
};

// The fastest of `measurements` that differ from `incumbent` only where `vary` allows, where a
// candidate replaces the incumbent only when at least `margin` (a fraction) faster: noise
// never moves a run off the setting it would have had anyway. `incumbent` itself must be among
// the measurements, else it is returned as it is.
CalibrationSettings pick_fastest(const std::vector<CalibrationMeasurement>& measurements,
                                 const CalibrationSettings& incumbent, double margin);

// An algorithm's reduced-precision check in words: "bf16 quality check passed: held-out
// accuracy 77.2% vs fp32 75.5% (difference +1.8 points, 95% interval -0.4 to +4.0, 100
// episodes after 60 training steps)", or by the training losses where it has no held-out data.
std::string precision_check_text(const nlohmann::json& check);

// The plan's source text for a calibrated value: "calibrated: jemalloc 16.5 vs glibc
// 4.9 episodes/s" and the like. `field` is allocator, threads or precision.
std::string calibrated_source(const CalibrationResult& result, const std::string& field);

// The thread counts worth trying on `cores` usable cores: 1, 2, 4, ... and `cores` itself.
std::vector<int> thread_candidates(int cores);

}  // namespace mlhost
