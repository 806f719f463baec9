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

std::string host_name() {
  char name[256] = {0};
  if (::gethostname(name, sizeof name - 1) != 0 || !name[0]) return "localhost";
  return name;
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

EventFileWriter::EventFileWriter(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  const std::time_t now = std::time(nullptr);
  path_ = dir / ("events.out.tfevents." + std::to_string(now) + "." + host_name());
  out_.open(path_, std::ios::binary | std::ios::app);
  if (!out_) throw std::runtime_error("cannot write TensorBoard events '" + path_.string() + "'");
  write_record(encode_version_event(static_cast<double>(now)));
}

void EventFileWriter::add_scalar(const std::string& tag, double value, int64_t step, double wall_time) {
  write_record(encode_scalar_event(tag, value, step, wall_time));
}

void EventFileWriter::write_record(const std::string& event) {
  std::string record;
  const uint64_t length = event.size();
  put_little_endian(record, length);
  put_little_endian(record, mlh::masked_crc32c(record.data(), sizeof length));
  record += event;
  put_little_endian(record, mlh::masked_crc32c(event.data(), event.size()));
  out_.write(record.data(), static_cast<std::streamsize>(record.size()));
  out_.flush();
}

}  // namespace mlhost
