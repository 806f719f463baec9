#include <gtest/gtest.h>

#include <torch/nn/modules/linear.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include <mlh/plugin.hpp>
#include <mlh/runtime/safetensors.hpp>

#include "temp_dir.hpp"

namespace fs = std::filesystem;

namespace {

// A file's place in a fresh folder (tests/common's TempDir).
class TempFile {
 public:
  std::string path() const { return (dir_ / "model.safetensors").string(); }

 private:
  TempDir dir_;
};

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A file made by hand: `header` as given, then `data_size` zero bytes.
void write_raw(const std::string& path, const std::string& header, size_t data_size) {
  std::string bytes(8, '\0');
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(n >> (8 * i));
  bytes += header + std::string(data_size, '\0');
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string load_error(const std::string& path) {
  try {
    mlh::rt::load_safetensors(path);
  } catch (const mlh::Error& e) {
    EXPECT_EQ(e.code(), MLH_ERR_INVALID_ARGUMENT) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected an error";
  return {};
}

}  // namespace

TEST(Safetensors, HeaderOfOneTensorFollowsTheSpecification) {
  TempFile file;
  mlh::rt::save_safetensors({{"w", at::tensor({1.0f, -2.0f, 0.5f})}}, file.path(), {{"who", "test"}});
  const std::string bytes = read_bytes(file.path());
  ASSERT_GE(bytes.size(), 8u);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(static_cast<unsigned char>(bytes[i])) << (8 * i);
  ASSERT_EQ(bytes.size(), 8 + n + 12);  // 3 floats
  EXPECT_EQ((8 + n) % 8, 0u) << "the data must start 8-byte aligned";
  const std::string header = bytes.substr(8, n);
  EXPECT_EQ(header.front(), '{');
  EXPECT_EQ(header.find_last_not_of(' ') + 1, header.find_last_of('}') + 1) << "padding is spaces after the JSON";
  const auto json = nlohmann::json::parse(header);
  EXPECT_EQ(json, nlohmann::json::parse(R"({"__metadata__": {"who": "test"},
      "w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]}})"));
  const float expected[] = {1.0f, -2.0f, 0.5f};  // the host is little-endian, as the format
  EXPECT_EQ(std::memcmp(bytes.data() + 8 + n, expected, 12), 0);
}

TEST(Safetensors, RoundTripsEveryDtypeAndShape) {
  TempFile file;
  const std::map<std::string, at::Tensor> tensors = {
      {"f32", at::randn({2, 3})},
      {"f64", at::randn({4}, at::kDouble)},
      {"f16", at::randn({3, 1}).to(at::kHalf)},
      {"bf16", at::randn({5}).to(at::kBFloat16)},
      {"i64", at::arange(6).reshape({2, 3})},
      {"i32", at::arange(3, at::kInt)},
      {"i16", at::arange(3, at::kShort)},
      {"i8", at::arange(-3, 3, at::kChar)},
      {"u8", at::arange(7, at::kByte)},
      {"bool", at::tensor({1, 0, 1}).to(at::kBool)},
      {"scalar", at::tensor(3.5)},
      {"empty", at::zeros({0, 4})},
      {"strided", at::arange(12.0).reshape({3, 4}).t()},  // written contiguous
  };
  mlh::rt::save_safetensors(tensors, file.path(), {{"k", "v"}});
  std::map<std::string, std::string> metadata;
  const auto loaded = mlh::rt::load_safetensors(file.path(), &metadata);
  EXPECT_EQ(metadata, (std::map<std::string, std::string>{{"k", "v"}}));
  ASSERT_EQ(loaded.size(), tensors.size());
  for (const auto& [name, t] : tensors) {
    const at::Tensor& l = loaded.at(name);
    EXPECT_EQ(l.scalar_type(), t.scalar_type()) << name;
    EXPECT_EQ(l.sizes(), t.sizes()) << name;
    EXPECT_TRUE(at::equal(l, t)) << name;
  }
  EXPECT_THROW(mlh::rt::save_safetensors({{"c", at::zeros({2}, at::kComplexFloat)}}, file.path()), mlh::Error);
}

TEST(Safetensors, ExportsModuleParametersAndBuffers) {
  struct Model : torch::nn::Module {
    Model() {
      register_module("proj", torch::nn::Linear(3, 2));
      register_buffer("count", at::full({1}, 7.0));
    }
  } model;
  TempFile file;
  mlh::rt::export_module_weights(model, file.path());
  std::map<std::string, std::string> metadata;
  const auto loaded = mlh::rt::load_safetensors(file.path(), &metadata);
  EXPECT_EQ(metadata.at("format"), "pt");
  ASSERT_EQ(loaded.size(), 3u);
  for (const auto& p : model.named_parameters()) EXPECT_TRUE(at::equal(loaded.at(p.key()), p.value())) << p.key();
  EXPECT_TRUE(at::equal(loaded.at("count"), at::full({1}, 7.0)));
}

TEST(Safetensors, RejectsBadHeadersNamingTheProblem) {
  TempFile file;
  const std::string& path = file.path();
  auto rejects = [&](const std::string& header, size_t data, const std::string& expected) {
    write_raw(path, header, data);
    const std::string message = load_error(path);
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find(expected), std::string::npos) << "wanted '" << expected << "' in: " << message;
  };
  rejects("not json", 0, "not a JSON object");
  rejects(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", 4, "past the file");
  rejects(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
              "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})", 12, "tensor 'b': data overlaps");
  rejects(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", 8, "tensor 'a': a gap");
  rejects(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", 8, "unreferenced");
  rejects(R"({"a": {"dtype": "Q4", "shape": [1], "data_offsets": [0, 4]}})", 4, "tensor 'a': unknown dtype \"Q4\"");
  rejects(R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", 8,
          "tensor 'a': data_offsets [0,8] span 8");
  rejects(R"({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", 4, "not a list of sizes");
  rejects(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}})", 4, "end before they begin");
  rejects(R"({"a": {"dtype": "F32", "shape": [1]}})", 4, "tensor 'a': data_offsets is not");
  rejects(R"({"__metadata__": {"n": 1}})", 0, "__metadata__ value 'n'");

  std::ofstream(path, std::ios::binary) << std::string("\xff\xff\xff\xff\x00\x00\x00\x00{}", 10);
  EXPECT_NE(load_error(path).find("exceeds the file"), std::string::npos);
  std::ofstream(path, std::ios::binary) << "abc";
  EXPECT_NE(load_error(path).find("shorter than"), std::string::npos);
  try {
    mlh::rt::load_safetensors(path + ".missing");
    ADD_FAILURE() << "expected an error";
  } catch (const mlh::Error& e) {
    EXPECT_EQ(e.code(), MLH_ERR_IO);
  }
}
