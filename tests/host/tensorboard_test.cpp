// TensorBoard event files decode: record framing with masked CRC-32C, Event and
// Summary.Value fields, as TensorBoard's reader expects them.
#include "run/tensorboard.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include <mlh/crc32c.hpp>

#include "test_files.hpp"

namespace mlhost {
namespace {

TEST(Crc32c, KnownAnswers) {
  EXPECT_EQ(mlh::crc32c("123456789", 9), 0xE3069283u);  // the standard check value
  EXPECT_EQ(mlh::crc32c("", 0), 0u);
  const std::vector<unsigned char> zeros(32, 0), ones(32, 0xFF);
  EXPECT_EQ(mlh::crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);  // RFC 3720 B.4
  EXPECT_EQ(mlh::crc32c(ones.data(), ones.size()), 0x62A8AB43u);
  // Continuing a checksum equals checksumming the whole, wherever the cut is.
  const std::string text = "The quick brown fox jumps over the lazy dog";
  for (size_t cut = 0; cut <= text.size(); ++cut)
    EXPECT_EQ(mlh::crc32c(text.data() + cut, text.size() - cut, mlh::crc32c(text.data(), cut)),
              mlh::crc32c(text.data(), text.size()));
}

// A minimal protocol-buffer reader for the fields we write.
struct Field {
  int number;
  int wire_type;
  uint64_t varint = 0;
  std::string bytes;  // length-delimited, fixed32 and fixed64 raw bytes
};

uint64_t read_varint(const std::string& s, size_t& pos) {
  uint64_t v = 0;
  for (int shift = 0; pos < s.size(); shift += 7) {
    const auto b = static_cast<unsigned char>(s[pos++]);
    v |= static_cast<uint64_t>(b & 0x7F) << shift;
    if (!(b & 0x80)) return v;
  }
  ADD_FAILURE() << "truncated varint";
  return v;
}

std::vector<Field> decode(const std::string& s) {
  std::vector<Field> fields;
  size_t pos = 0;
  while (pos < s.size()) {
    const uint64_t key = read_varint(s, pos);
    Field f{static_cast<int>(key >> 3), static_cast<int>(key & 7)};
    if (f.wire_type == 0) f.varint = read_varint(s, pos);
    else if (f.wire_type == 1) f.bytes = s.substr(pos, 8), pos += 8;
    else if (f.wire_type == 5) f.bytes = s.substr(pos, 4), pos += 4;
    else if (f.wire_type == 2) {
      const uint64_t n = read_varint(s, pos);
      f.bytes = s.substr(pos, n);
      pos += n;
    } else {
      ADD_FAILURE() << "unexpected wire type " << f.wire_type;
      break;
    }
    fields.push_back(f);
  }
  return fields;
}

const Field* field(const std::vector<Field>& fs, int number) {
  for (const auto& f : fs)
    if (f.number == number) return &f;
  return nullptr;
}

// Reads every record, checking both CRCs; returns the Event payloads.
std::vector<std::string> read_records(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string data = buf.str();
  std::vector<std::string> events;
  size_t pos = 0;
  while (pos < data.size()) {
    EXPECT_LE(pos + 12, data.size()) << "truncated record header";
    uint64_t length;
    uint32_t length_crc, data_crc;
    std::memcpy(&length, data.data() + pos, 8);
    std::memcpy(&length_crc, data.data() + pos + 8, 4);
    EXPECT_EQ(length_crc, mlh::masked_crc32c(data.data() + pos, 8));
    const std::string event = data.substr(pos + 12, length);
    std::memcpy(&data_crc, data.data() + pos + 12 + length, 4);
    EXPECT_EQ(data_crc, mlh::masked_crc32c(event.data(), event.size()));
    events.push_back(event);
    pos += 12 + length + 4;
  }
  return events;
}

TEST(TensorBoard, EventFileDecodes) {
  TempDir t;
  std::filesystem::path file;
  {
    EventFileWriter w(t / "tb");
    w.add_scalar("train/loss", 0.25, 7, 1700000000.5);
    w.add_scalar("perf/samples_per_s", 1234.5, 8, 1700000001.0);
    file = w.path();
  }
  EXPECT_EQ(file.filename().string().rfind("events.out.tfevents.", 0), 0u);
  const std::vector<std::string> events = read_records(file);
  ASSERT_EQ(events.size(), 3u);

  const auto version = decode(events[0]);
  ASSERT_NE(field(version, 3), nullptr);
  EXPECT_EQ(field(version, 3)->bytes, "brain.Event:2");

  const auto scalar = decode(events[1]);
  ASSERT_NE(field(scalar, 1), nullptr);
  double wall;
  std::memcpy(&wall, field(scalar, 1)->bytes.data(), 8);
  EXPECT_DOUBLE_EQ(wall, 1700000000.5);
  EXPECT_EQ(field(scalar, 2)->varint, 7u);
  const auto summary = decode(field(scalar, 5)->bytes);
  const auto value = decode(field(summary, 1)->bytes);
  EXPECT_EQ(field(value, 1)->bytes, "train/loss");
  ASSERT_EQ(field(value, 2)->wire_type, 5);
  float simple;
  std::memcpy(&simple, field(value, 2)->bytes.data(), 4);
  EXPECT_FLOAT_EQ(simple, 0.25f);

  const auto second = decode(field(decode(field(decode(events[2]), 5)->bytes), 1)->bytes);
  EXPECT_EQ(field(second, 1)->bytes, "perf/samples_per_s");
}

// The hparams plugin's summaries: a Value tagged _hparams_/session_start_info whose metadata's
// plugin data (plugin "hparams") holds HParamsPluginData with the session's hparams map, and
// the end's status.
TEST(TensorBoard, HparamsSessionStartAndEndDecode) {
  const nlohmann::json hparams = {{"lr", 0.003}, {"model.hidden", 64}, {"optimizer", "adam_atan2"}, {"ema", true}};
  const auto event = decode(encode_hparams_start_event(hparams, 1700000000.0));
  const auto value = decode(field(decode(field(event, 5)->bytes), 1)->bytes);
  EXPECT_EQ(field(value, 1)->bytes, "_hparams_/session_start_info");
  const auto plugin_data = decode(field(decode(field(value, 9)->bytes), 1)->bytes);
  EXPECT_EQ(field(plugin_data, 1)->bytes, "hparams");
  const auto data = decode(field(plugin_data, 2)->bytes);
  ASSERT_NE(field(data, 3), nullptr) << "session_start_info";
  std::map<std::string, std::vector<Field>> map;
  for (const auto& entry : decode(field(data, 3)->bytes))
    if (entry.number == 1) {
      const auto kv = decode(entry.bytes);
      map[field(kv, 1)->bytes] = decode(field(kv, 2)->bytes);
    }
  ASSERT_EQ(map.size(), 4u);
  double number;
  std::memcpy(&number, field(map["lr"], 2)->bytes.data(), 8);
  EXPECT_DOUBLE_EQ(number, 0.003);
  std::memcpy(&number, field(map["model.hidden"], 2)->bytes.data(), 8);
  EXPECT_DOUBLE_EQ(number, 64);
  EXPECT_EQ(field(map["optimizer"], 3)->bytes, "adam_atan2");
  EXPECT_EQ(field(map["ema"], 4)->varint, 1u);

  const auto end = decode(field(decode(field(decode(field(decode(field(decode(encode_hparams_end_event(
                                                                          HparamsStatus::kFailure, 1700000100.0)),
                                                                      5)->bytes),
                                                          1)->bytes),
                                              9)->bytes),
                                  1)->bytes);
  const auto end_info = decode(field(decode(field(end, 2)->bytes), 4)->bytes);
  EXPECT_EQ(field(end_info, 1)->varint, 2u) << "FAILURE";
}

TEST(TensorBoard, ConfigsFlattenToDottedHparams) {
  const nlohmann::json config = {{"lr", 0.1}, {"model", {{"hidden", 64}, {"mlp_t", false}}}, {"splits", {"a", "b"}},
                                 {"dir", ""}, {"none", nullptr}};
  const nlohmann::json flat = flatten_hparams(config);
  EXPECT_EQ(flat, nlohmann::json({{"lr", 0.1}, {"model.hidden", 64}, {"model.mlp_t", false},
                                  {"splits", "[\"a\",\"b\"]"}, {"dir", ""}, {"none", "null"}}));
}

TEST(TensorBoard, LargeStepsUseVarints) {
  const auto fields = decode(encode_scalar_event("x", 1.0, 300000, 0));
  EXPECT_EQ(field(fields, 2)->varint, 300000u);
}

}  // namespace
}  // namespace mlhost
