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

// Where a run's event files go: the run folder itself, so that `tensorboard --logdir runs/`
// lists the run by its folder's name; a run begun before that keeps its tensorboard/ folder,
// so that its launches stay one run.
std::filesystem::path event_dir(const std::filesystem::path& run_dir);

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
  // A resumed run's restart at `step`: TensorBoard discards what earlier files of the run
  // logged at this step or later (the attempt that died past its checkpoint).
  void add_session_start(int64_t step, double wall_time);

 private:
  void append(const std::string& event);  // one record, flushed

  std::filesystem::path path_;
  std::ofstream out_;
};

// A training run's hparams session (the hparams plugin's session start and end summaries: its
// hyperparameters, a flat object of numbers, strings and booleans, and how it ended) in a file
// of its own, <dir>/events.out.tfevents.0.hparams, which every launch of the run replaces
// whole. TensorBoard keeps the first session end it reads, so a run resumed after a failure or
// a stop must not keep the earlier launch's: the file holds one start and at most one end,
// the last launch's. Its name sorts before the scalar files', so it is read first.
class HparamsSessionFile {
 public:
  explicit HparamsSessionFile(const std::filesystem::path& dir);
  const std::filesystem::path& path() const { return path_; }
  void start(const nlohmann::json& hparams, double wall_time);  // the file: the start, no end
  void end(HparamsStatus status, double wall_time);             // the start, then this end

 private:
  void write(const std::string& events) const;

  std::filesystem::path path_;
  std::string start_;  // the version and session start records
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
