// TensorBoard event files (events.out.tfevents.*) for a run's scalar metrics, written
// without TensorFlow or protobuf: records of a length, its masked CRC-32C, an Event
// protocol buffer and its masked CRC-32C. TensorBoard and tensorboardX read them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace mlhost {

class EventFileWriter {
 public:
  // Creates <dir>/events.out.tfevents.<unix seconds>.<host name> with the version event.
  explicit EventFileWriter(const std::filesystem::path& dir);
  const std::filesystem::path& path() const { return path_; }

  // One scalar (a Summary.Value with simple_value) at a step; flushed at once, so a crash
  // keeps every record written before it.
  void add_scalar(const std::string& tag, double value, int64_t step, double wall_time);

 private:
  void write_record(const std::string& event);

  std::filesystem::path path_;
  std::ofstream out_;
};

// The protocol-buffer encoding of an Event: exposed for tests.
std::string encode_version_event(double wall_time);
std::string encode_scalar_event(const std::string& tag, double value, int64_t step, double wall_time);

}  // namespace mlhost
