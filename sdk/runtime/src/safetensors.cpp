#include "mlh/runtime/safetensors.hpp"

#include <torch/nn/module.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "mlh/plugin.hpp"
#include "mlh/runtime/checkpoint.hpp"

// The format is little-endian and tensors are written as their in-memory bytes.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors I/O assumes a little-endian host");

namespace mlh::rt {
namespace {

// The format's own limit: it keeps a hostile header from exhausting memory.
constexpr uint64_t kMaxHeaderSize = 100'000'000;

const std::vector<std::pair<at::ScalarType, const char*>>& dtype_names() {
  static const std::vector<std::pair<at::ScalarType, const char*>> names = {
      {at::kDouble, "F64"}, {at::kFloat, "F32"}, {at::kHalf, "F16"}, {at::kBFloat16, "BF16"}, {at::kLong, "I64"},
      {at::kInt, "I32"},    {at::kShort, "I16"}, {at::kChar, "I8"},  {at::kByte, "U8"},       {at::kBool, "BOOL"}};
  return names;
}

void put_u64_le(unsigned char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}

}  // namespace

void save_safetensors(const std::map<std::string, at::Tensor>& tensors, const std::string& path,
                      const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<at::Tensor> data;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    if (name == "__metadata__")
      throw Error(MLH_ERR_INVALID_ARGUMENT, "safetensors '" + path + "': '__metadata__' cannot name a tensor");
    const auto& names = dtype_names();
    const auto it =
        std::find_if(names.begin(), names.end(), [&, &t = tensor](const auto& n) { return n.first == t.scalar_type(); });
    if (it == names.end())
      throw Error(MLH_ERR_INVALID_ARGUMENT, "safetensors '" + path + "': tensor '" + name + "' has dtype " +
                                                c10::toString(tensor.scalar_type()) + ", which the format lacks");
    at::Tensor cpu = tensor.detach().to(at::kCPU).contiguous();
    const uint64_t bytes = cpu.numel() * cpu.element_size();
    header[name] = {{"dtype", it->second}, {"shape", cpu.sizes().vec()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    data.push_back(std::move(cpu));
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');

  AtomicFile file(path);
  unsigned char prefix[8];
  put_u64_le(prefix, json.size());
  file.write(prefix, sizeof prefix);
  file.write(json.data(), json.size());
  for (const at::Tensor& t : data) file.write(t.data_ptr(), t.numel() * t.element_size());
  file.commit();
}

void export_module_weights(const torch::nn::Module& module, const std::string& path,
                           std::map<std::string, std::string> metadata) {
  std::map<std::string, at::Tensor> tensors;
  for (const auto& p : module.named_parameters()) tensors[p.key()] = p.value();
  for (const auto& b : module.named_buffers()) tensors[b.key()] = b.value();
  metadata.emplace("format", "pt");
  save_safetensors(tensors, path, metadata);
}

std::map<std::string, at::Tensor> load_safetensors(const std::string& path,
                                                   std::map<std::string, std::string>* metadata) {
  auto bad = [&](const std::string& what) -> Error {
    return Error(MLH_ERR_INVALID_ARGUMENT, "safetensors '" + path + "': " + what);
  };
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw Error(MLH_ERR_IO, "cannot open safetensors file '" + path + "': " + std::strerror(errno));
  const uint64_t file_size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  unsigned char prefix[8] = {};
  if (file_size < 8 || !in.read(reinterpret_cast<char*>(prefix), 8))
    throw bad("shorter than the 8-byte header length (" + std::to_string(file_size) + " bytes)");
  uint64_t header_size = 0;
  for (int i = 0; i < 8; ++i) header_size |= uint64_t(prefix[i]) << (8 * i);
  if (header_size > kMaxHeaderSize || header_size > file_size - 8)
    throw bad("header length " + std::to_string(header_size) + " exceeds the file (" + std::to_string(file_size) +
              " bytes) or the format's 100 MB limit");
  std::string text(header_size, '\0');
  if (!in.read(text.data(), static_cast<std::streamsize>(header_size))) throw bad("cannot read the header");
  const nlohmann::json header = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!header.is_object()) throw bad("the header is not a JSON object");

  struct Entry {
    std::string name;
    at::ScalarType dtype;
    std::vector<int64_t> shape;
    uint64_t begin, end;
  };
  std::vector<Entry> entries;
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") {
      if (!info.is_object()) throw bad("__metadata__ is not an object");
      for (const auto& [key, value] : info.items()) {
        if (!value.is_string()) throw bad("__metadata__ value '" + key + "' is not a string");
        if (metadata) (*metadata)[key] = value.get<std::string>();
      }
      continue;
    }
    const std::string where = "tensor '" + name + "': ";
    if (!info.is_object()) throw bad(where + "not an object");
    const auto dtype = info.find("dtype");
    if (dtype == info.end() || !dtype->is_string()) throw bad(where + "no dtype");
    const auto& names = dtype_names();
    const auto known = std::find_if(names.begin(), names.end(), [&](const auto& n) { return *dtype == n.second; });
    if (known == names.end()) throw bad(where + "unknown dtype " + dtype->dump());
    Entry e{name, known->first, {}, 0, 0};
    const auto shape = info.find("shape");
    if (shape == info.end() || !shape->is_array()) throw bad(where + "no shape");
    uint64_t numel = 1;
    for (const auto& d : *shape) {
      if (!d.is_number_unsigned()) throw bad(where + "shape " + shape->dump() + " is not a list of sizes");
      const uint64_t size = d.get<uint64_t>();
      if (size > uint64_t(INT64_MAX) || (size != 0 && numel > file_size / size))
        throw bad(where + "shape " + shape->dump() + " is larger than the file");
      numel *= size;
      e.shape.push_back(static_cast<int64_t>(size));
    }
    const auto offsets = info.find("data_offsets");
    if (offsets == info.end() || !offsets->is_array() || offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
        !(*offsets)[1].is_number_unsigned())
      throw bad(where + "data_offsets is not [begin, end]");
    e.begin = (*offsets)[0].get<uint64_t>();
    e.end = (*offsets)[1].get<uint64_t>();
    if (e.begin > e.end) throw bad(where + "data_offsets " + offsets->dump() + " end before they begin");
    const uint64_t expected = numel * c10::elementSize(e.dtype);
    if (e.end - e.begin != expected)
      throw bad(where + "data_offsets " + offsets->dump() + " span " + std::to_string(e.end - e.begin) +
                " bytes, but shape " + shape->dump() + " of " + dtype->get<std::string>() + " needs " +
                std::to_string(expected));
    entries.push_back(std::move(e));
  }

  // The tensors must tile the data exactly: no overlap, no hole, nothing past the end.
  const uint64_t data_size = file_size - 8 - header_size;
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;
  for (const Entry& e : entries) {
    if (e.begin < covered) throw bad("tensor '" + e.name + "': data overlaps the tensor before it");
    if (e.begin > covered) throw bad("tensor '" + e.name + "': a gap of unreferenced bytes precedes its data");
    covered = e.end;
  }
  if (covered != data_size)
    throw bad(covered > data_size
                  ? "tensor data ends at byte " + std::to_string(covered) + " past the file's " +
                        std::to_string(data_size) + " data bytes"
                  : std::to_string(data_size - covered) + " bytes after the last tensor are unreferenced");

  std::map<std::string, at::Tensor> tensors;
  for (const Entry& e : entries) {
    at::Tensor t = at::empty(e.shape, at::TensorOptions().dtype(e.dtype));
    if (e.end > e.begin && !in.read(static_cast<char*>(t.data_ptr()), static_cast<std::streamsize>(e.end - e.begin)))
      throw Error(MLH_ERR_IO, "safetensors '" + path + "': cannot read tensor '" + e.name + "'");
    tensors.emplace(e.name, std::move(t));
  }
  return tensors;
}

}  // namespace mlh::rt
