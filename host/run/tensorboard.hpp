// TensorBoard event files (events.out.tfevents.*) for a run's scalar metrics and its
// hyperparameters, written without TensorFlow or protobuf: records of a length, its masked
// CRC-32C, an Event protocol buffer and its masked CRC-32C. TensorBoard and tensorboardX read
// them; the hparams plugin's summaries put every run in one table of TensorBoard's HParams
// dashboard, with the runs' scalars as its metric columns.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace mlhost {

// The hparams plugin's session status (tensorboard/plugins/hparams/api.proto, Status).
enum class HparamsStatus { kUnknown = 0, kSuccess = 1, kFailure = 2, kRunning = 3 };

class EventFileWriter {
 public:
  // Creates <dir>/events.out.tfevents.<unix seconds>.<host name> with the version event.
  explicit EventFileWriter(const std::filesystem::path& dir);
  const std::filesystem::path& path() const { return path_; }

  // One scalar (a Summary.Value with simple_value) at a step; flushed at once, so a crash
  // keeps every record written before it.
  void add_scalar(const std::string& tag, double value, int64_t step, double wall_time);
  // The run's hyperparameters (a flat object of numbers, strings and booleans) when it starts,
  // and its status when it ends: the hparams plugin's session start and end summaries.
  void add_hparams_start(const nlohmann::json& hparams, double wall_time);
  void add_hparams_end(HparamsStatus status, double wall_time);

 private:
  void write_record(const std::string& event);

  std::filesystem::path path_;
  std::ofstream out_;
};

// The protocol-buffer encoding of an Event: exposed for tests.
std::string encode_version_event(double wall_time);
std::string encode_scalar_event(const std::string& tag, double value, int64_t step, double wall_time);
std::string encode_hparams_start_event(const nlohmann::json& hparams, double wall_time);
std::string encode_hparams_end_event(HparamsStatus status, double wall_time);

// A config (and whatever else describes a run) as hparams: nested objects become dotted keys,
// numbers, strings and booleans stay, arrays and nulls become their JSON text.
nlohmann::json flatten_hparams(const nlohmann::json& value, const std::string& prefix = "");

}  // namespace mlhost
