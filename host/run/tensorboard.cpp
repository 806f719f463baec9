#include "run/tensorboard.hpp"

#include <unistd.h>

#include <cstring>
#include <ctime>
#include <stdexcept>

#include <mlh/crc32c.hpp>

namespace mlhost {
namespace {

// Protocol-buffer wire format: a key is (field number << 3) | wire type.
constexpr int kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void put_key(std::string& out, int field, int wire_type) { put_varint(out, (static_cast<uint64_t>(field) << 3) | wire_type); }

template <class T>
void put_little_endian(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));  // the platforms we build for are little-endian
  out.append(bytes, sizeof(T));
}

void put_bytes(std::string& out, int field, const std::string& bytes) {
  put_key(out, field, kLengthDelimited);
  put_varint(out, bytes.size());
  out += bytes;
}

// Event fields: wall_time = 1 (double), step = 2 (int64), file_version = 3 (string),
// summary = 5 (Summary). Summary: value = 1 (Value). Value: tag = 1, simple_value = 2 (float).
std::string event_header(double wall_time, int64_t step) {
  std::string e;
  put_key(e, 1, kFixed64);
  put_little_endian(e, wall_time);
  put_key(e, 2, kVarint);
  put_varint(e, static_cast<uint64_t>(step));
  return e;
}

// A Summary holding one value: `tag` with the hparams plugin's metadata and no data (the
// plugin's content is the whole payload; TensorBoard gives such values a null tensor).
// SummaryMetadata: plugin_data = 1 (PluginData: plugin_name = 1, content = 2); Value:
// metadata = 9.
std::string hparams_event(const std::string& tag, const std::string& plugin_content, double wall_time) {
  std::string plugin_data;
  put_bytes(plugin_data, 1, "hparams");
  put_bytes(plugin_data, 2, plugin_content);
  std::string metadata;
  put_bytes(metadata, 1, plugin_data);
  std::string v;
  put_bytes(v, 1, tag);
  put_bytes(v, 9, metadata);
  std::string summary;
  put_bytes(summary, 1, v);
  std::string e = event_header(wall_time, 0);
  put_bytes(e, 5, summary);
  return e;
}

// google.protobuf.Value: number_value = 2 (double), string_value = 3, bool_value = 4.
std::string protobuf_value(const nlohmann::json& v) {
  std::string out;
  if (v.is_boolean()) {
    put_key(out, 4, kVarint);
    put_varint(out, v.get<bool>() ? 1 : 0);
  } else if (v.is_number()) {
    put_key(out, 2, kFixed64);
    put_little_endian(out, v.get<double>());
  } else {
    put_bytes(out, 3, v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out;
}

std::string host_name() {
  char name[256] = {0};
  if (::gethostname(name, sizeof name - 1) != 0 || !name[0]) return "localhost";
  return name;
}

// A TFRecord: the length, its masked CRC-32C, the Event, its masked CRC-32C.
std::string framed_record(const std::string& event) {
  std::string record;
  const uint64_t length = event.size();
  put_little_endian(record, length);
  put_little_endian(record, mlh::masked_crc32c(record.data(), sizeof length));
  record += event;
  put_little_endian(record, mlh::masked_crc32c(event.data(), event.size()));
  return record;
}

}  // namespace

std::string encode_version_event(double wall_time) {
  std::string e = event_header(wall_time, 0);
  put_bytes(e, 3, "brain.Event:2");
  return e;
}

std::string encode_scalar_event(const std::string& tag, double value, int64_t step, double wall_time) {
  std::string v;
  put_bytes(v, 1, tag);
  put_key(v, 2, kFixed32);
  put_little_endian(v, static_cast<float>(value));
  std::string summary;
  put_bytes(summary, 1, v);
  std::string e = event_header(wall_time, step);
  put_bytes(e, 5, summary);
  return e;
}

// Event.session_log = 7, SessionLog.status = 1 with START = 1: TensorBoard drops every event
// of the run at this step or later that it read before (a restart's "purge").
std::string encode_session_start_event(int64_t step, double wall_time) {
  std::string log;
  put_key(log, 1, kVarint);
  put_varint(log, 1);
  std::string e = event_header(wall_time, step);
  put_bytes(e, 7, log);
  return e;
}

// HParamsPluginData (version = 1, session_start_info = 3, session_end_info = 4), version 0 as
// TensorBoard writes it. SessionStartInfo: hparams = 1 (map<string, Value>: entries of key = 1,
// value = 2), start_time_secs = 5. SessionEndInfo: status = 1, end_time_secs = 2.
std::string encode_hparams_start_event(const nlohmann::json& hparams, double wall_time) {
  std::string start;
  for (const auto& [key, value] : hparams.items()) {
    std::string entry;
    put_bytes(entry, 1, key);
    put_bytes(entry, 2, protobuf_value(value));
    put_bytes(start, 1, entry);
  }
  put_key(start, 5, kFixed64);
  put_little_endian(start, wall_time);
  std::string data;
  put_bytes(data, 3, start);
  return hparams_event("_hparams_/session_start_info", data, wall_time);
}

std::string encode_hparams_end_event(HparamsStatus status, double wall_time) {
  std::string end;
  put_key(end, 1, kVarint);
  put_varint(end, static_cast<uint64_t>(status));
  put_key(end, 2, kFixed64);
  put_little_endian(end, wall_time);
  std::string data;
  put_bytes(data, 4, end);
  return hparams_event("_hparams_/session_end_info", data, wall_time);
}

nlohmann::json flatten_hparams(const nlohmann::json& value, const std::string& prefix) {
  nlohmann::json flat = nlohmann::json::object();
  if (value.is_object()) {
    for (const auto& [key, v] : value.items()) flat.update(flatten_hparams(v, prefix.empty() ? key : prefix + "." + key));
  } else if (!prefix.empty()) {
    flat[prefix] = value.is_number() || value.is_string() || value.is_boolean() ? value : nlohmann::json(value.dump());
  }
  return flat;
}

std::filesystem::path event_dir(const std::filesystem::path& run_dir) {
  std::error_code ec;
  return std::filesystem::is_directory(run_dir / "tensorboard", ec) ? run_dir / "tensorboard" : run_dir;
}

EventFileWriter::EventFileWriter(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  const std::time_t now = std::time(nullptr);
  path_ = dir / ("events.out.tfevents." + std::to_string(now) + "." + host_name());
  out_.open(path_, std::ios::binary | std::ios::app);
  if (!out_) throw std::runtime_error("cannot write TensorBoard events '" + path_.string() + "'");
  append(encode_version_event(static_cast<double>(now)));
}

void EventFileWriter::add_scalar(const std::string& tag, double value, int64_t step, double wall_time) {
  append(encode_scalar_event(tag, value, step, wall_time));
}

void EventFileWriter::add_session_start(int64_t step, double wall_time) {
  append(encode_session_start_event(step, wall_time));
}

void EventFileWriter::append(const std::string& event) {
  const std::string record = framed_record(event);
  out_.write(record.data(), static_cast<std::streamsize>(record.size()));
  out_.flush();
}

HparamsSessionFile::HparamsSessionFile(const std::filesystem::path& dir)
    : path_(dir / "events.out.tfevents.0.hparams") {
  std::filesystem::create_directories(dir);
}

void HparamsSessionFile::start(const nlohmann::json& hparams, double wall_time) {
  start_ = framed_record(encode_version_event(wall_time)) +
           framed_record(encode_hparams_start_event(hparams, wall_time));
  write(start_);
}

void HparamsSessionFile::end(HparamsStatus status, double wall_time) {
  write(start_ + framed_record(encode_hparams_end_event(status, wall_time)));
}

void HparamsSessionFile::write(const std::string& events) const {
  // Replaced whole (a temporary file, then rename): a reader sees the old file or the new.
  const std::filesystem::path tmp = path_.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(events.data(), static_cast<std::streamsize>(events.size()));
    if (!out.flush()) throw std::runtime_error("cannot write TensorBoard events '" + tmp.string() + "'");
  }
  std::filesystem::rename(tmp, path_);
}

}  // namespace mlhost
