#include "probe/device.hpp"

#include <cstring>
#include <regex>
#include <sstream>

namespace mlhost {
namespace {

using nlohmann::json;

// Records beyond this count are garbage, not hardware.
constexpr uint32_t kMaxRecords = 1024;
constexpr size_t kMaxString = 4096;

struct Bit {
  uint32_t bit;
  const char* name;
};
constexpr Bit kPrecisions[] = {{MLH_PRECISION_FP32, "fp32"}, {MLH_PRECISION_FP16, "fp16"},
                               {MLH_PRECISION_BF16, "bf16"}, {MLH_PRECISION_TF32, "tf32"},
                               {MLH_PRECISION_FP64, "fp64"}, {MLH_PRECISION_INT8, "int8"}};
constexpr Bit kLimitations[] = {{MLH_LIMIT_NO_DISTRIBUTED, "no_distributed"},
                                {MLH_LIMIT_NO_FP16_AUTOCAST, "no_fp16_autocast"},
                                {MLH_LIMIT_NO_GRAPH_COMPILE, "no_graph_compile"},
                                {MLH_LIMIT_NO_MEMORY_FRACTION, "no_memory_fraction"}};

template <size_t N>
std::vector<std::string> names_of(uint32_t mask, const Bit (&table)[N]) {
  std::vector<std::string> out;
  for (const Bit& b : table)
    if (mask & b.bit) out.push_back(b.name);
  return out;
}

template <size_t N>
uint32_t mask_of(const json& names, const Bit (&table)[N]) {
  uint32_t mask = 0;
  for (const auto& n : names)
    for (const Bit& b : table)
      if (n.get<std::string>() == b.name) mask |= b.bit;
  return mask;
}

class RecordReader {
 public:
  RecordReader(const std::string& plugin, uint32_t i) : where_("record " + std::to_string(i) + " of plugin '" + plugin + "'") {}

  [[noreturn]] void fail(const std::string& what) const { throw MalformedRecord(where_ + ": " + what); }

  std::string required(const char* field, const char* s) const {
    if (!s) fail(std::string("field '") + field + "' is NULL");
    std::string v = optional(field, s);
    if (v.empty()) fail(std::string("field '") + field + "' is empty");
    return v;
  }
  std::string optional(const char* field, const char* s) const {
    if (!s) return "";
    size_t n = strnlen(s, kMaxString + 1);
    if (n > kMaxString) fail(std::string("field '") + field + "' is longer than 4096 bytes");
    return std::string(s, n);
  }
  int64_t memory(const char* field, int64_t v) const {
    if (v < MLH_UNKNOWN) fail(std::string("field '") + field + "' is negative: " + std::to_string(v));
    return v;
  }

 private:
  std::string where_;
};

std::vector<std::string> split_features(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

std::string join_features(const std::vector<std::string>& features) {
  std::string out;
  for (const std::string& f : features) out += (out.empty() ? "" : ",") + f;
  return out;
}

}  // namespace

std::vector<std::string> Device::feature_list() const { return split_features(features); }

json Device::details() const { return details_json.empty() ? json::object() : json::parse(details_json); }

const char* device_class_name(int32_t c) {
  switch (c) {
    case MLH_DEVICE_CLASS_DISCRETE_GPU: return "discrete gpu";
    case MLH_DEVICE_CLASS_UNIFIED_GPU: return "unified memory gpu";
    case MLH_DEVICE_CLASS_CPU: return "cpu";
    default: return "other";
  }
}

std::vector<std::string> precision_names(uint32_t mask) { return names_of(mask, kPrecisions); }
std::vector<std::string> limitation_names(uint32_t mask) { return names_of(mask, kLimitations); }

std::vector<Device> devices_from_records(const std::string& plugin, const mlh_device_record* records,
                                         uint32_t count) {
  if (count > kMaxRecords)
    throw MalformedRecord("plugin '" + plugin + "' reported " + std::to_string(count) + " devices (more than " +
                          std::to_string(kMaxRecords) + ")");
  if (count > 0 && records == nullptr)
    throw MalformedRecord("plugin '" + plugin + "' reported " + std::to_string(count) +
                          " devices but returned no records (NULL)");
  static const std::regex torch_device_pattern("^[a-z][a-z_]*(:[0-9]+)?$");
  std::vector<Device> out;
  // Records are laid out with the plugin's struct size, which may be larger than ours (a
  // newer minor appended fields): step by the size the first record declares.
  const char* base = reinterpret_cast<const char*>(records);
  const uint32_t stride = count > 0 ? records->struct_size : 0;
  for (uint32_t i = 0; i < count; ++i) {
    const auto* r = reinterpret_cast<const mlh_device_record*>(base + static_cast<size_t>(i) * stride);
    RecordReader rd(plugin, i);
    if (r->struct_size != stride)
      rd.fail("struct_size " + std::to_string(r->struct_size) + " differs from record 0's " + std::to_string(stride));
    if (!MLH_HAS_FIELD(r, mlh_device_record, details_json))
      rd.fail("struct_size " + std::to_string(r->struct_size) + " is smaller than an ABI 1.0 record (" +
              std::to_string(sizeof(mlh_device_record)) + " bytes)");
    Device d;
    d.plugin = plugin;
    if (r->device_class < MLH_DEVICE_CLASS_OTHER || r->device_class > MLH_DEVICE_CLASS_DISCRETE_GPU)
      rd.fail("field 'device_class' has unknown value " + std::to_string(r->device_class));
    d.device_class = r->device_class;
    if (r->index < 0) rd.fail("field 'index' is negative: " + std::to_string(r->index));
    d.index = r->index;
    if (r->available != 0 && r->available != 1)
      rd.fail("field 'available' must be 0 or 1, got " + std::to_string(r->available));
    d.available = r->available == 1;
    d.kind = rd.required("kind", r->kind);
    d.name = rd.required("name", r->name);
    d.torch_device = rd.required("torch_device", r->torch_device);
    if (!std::regex_match(d.torch_device, torch_device_pattern))
      rd.fail("field 'torch_device' \"" + d.torch_device + "\" is not a LibTorch device string");
    d.vendor = rd.optional("vendor", r->vendor);
    d.unavailable_reason = rd.optional("unavailable_reason", r->unavailable_reason);
    if (!d.available && d.unavailable_reason.empty()) d.unavailable_reason = "the plugin gave no reason";
    d.uuid = rd.optional("uuid", r->uuid);
    d.pci_bus_id = rd.optional("pci_bus_id", r->pci_bus_id);
    d.driver_version = rd.optional("driver_version", r->driver_version);
    d.runtime_version = rd.optional("runtime_version", r->runtime_version);
    d.memory_total_bytes = rd.memory("memory_total_bytes", r->memory_total_bytes);
    d.memory_free_bytes = rd.memory("memory_free_bytes", r->memory_free_bytes);
    d.memory_unified = r->memory_unified != 0;
    d.compute_units = r->compute_units;
    d.logical_units = r->logical_units;
    d.capability_major = r->capability_major;
    d.capability_minor = r->capability_minor;
    d.precisions = r->precisions;
    d.fast_precisions = r->fast_precisions;
    d.limitations = r->limitations;
    d.recommended_threads = r->recommended_threads;
    d.score_hint = r->score_hint;
    d.features = join_features(split_features(rd.optional("features", r->features)));
    const std::string details = rd.optional("details_json", r->details_json);
    if (!details.empty()) {
      const json parsed = json::parse(details, nullptr, /*allow_exceptions=*/false);
      if (!parsed.is_object()) rd.fail("field 'details_json' is not a JSON object");
      d.details_json = parsed.dump();
    }
    out.push_back(std::move(d));
  }
  return out;
}

json device_to_json(const Device& d) {
  auto opt = [](const std::string& s) { return s.empty() ? json(nullptr) : json(s); };
  auto num = [](int64_t v) { return v == MLH_UNKNOWN ? json(nullptr) : json(v); };
  json j = {{"id", d.id()},
            {"plugin", d.plugin},
            {"kind", d.kind},
            {"index", d.index},
            {"class", device_class_name(d.device_class)},
            {"name", d.name},
            {"vendor", opt(d.vendor)},
            {"torch_device", d.torch_device},
            {"available", d.available},
            {"unavailable_reason", opt(d.unavailable_reason)},
            {"uuid", opt(d.uuid)},
            {"pci_bus_id", opt(d.pci_bus_id)},
            {"driver_version", opt(d.driver_version)},
            {"runtime_version", opt(d.runtime_version)},
            {"memory_total_bytes", num(d.memory_total_bytes)},
            {"memory_free_bytes", num(d.memory_free_bytes)},
            {"memory_unified", d.memory_unified},
            {"compute_units", num(d.compute_units)},
            {"logical_units", num(d.logical_units)},
            {"compute_capability", d.capability_major == MLH_UNKNOWN
                                       ? json(nullptr)
                                       : json(std::to_string(d.capability_major) + "." +
                                              std::to_string(d.capability_minor))},
            {"precisions", precision_names(d.precisions)},
            {"fast_precisions", precision_names(d.fast_precisions)},
            {"limitations", limitation_names(d.limitations)},
            {"recommended_threads", num(d.recommended_threads)},
            {"score_hint", d.score_hint},
            {"features", d.feature_list()},
            {"details", d.details()}};
  return j;
}

Device device_from_json(const json& j) {
  auto str = [&](const char* k) { return j.at(k).is_null() ? std::string() : j.at(k).get<std::string>(); };
  auto num = [&](const char* k) { return j.at(k).is_null() ? int64_t{MLH_UNKNOWN} : j.at(k).get<int64_t>(); };
  Device d;
  d.plugin = j.at("plugin").get<std::string>();
  const std::string cls = j.at("class").get<std::string>();
  for (int32_t c = MLH_DEVICE_CLASS_OTHER; c <= MLH_DEVICE_CLASS_DISCRETE_GPU; ++c)
    if (cls == device_class_name(c)) d.device_class = c;
  d.index = j.at("index").get<int32_t>();
  d.available = j.at("available").get<bool>();
  d.kind = str("kind");
  d.name = str("name");
  d.vendor = str("vendor");
  d.torch_device = str("torch_device");
  d.unavailable_reason = str("unavailable_reason");
  d.uuid = str("uuid");
  d.pci_bus_id = str("pci_bus_id");
  d.driver_version = str("driver_version");
  d.runtime_version = str("runtime_version");
  d.memory_total_bytes = num("memory_total_bytes");
  d.memory_free_bytes = num("memory_free_bytes");
  d.memory_unified = j.at("memory_unified").get<bool>();
  d.compute_units = static_cast<int32_t>(num("compute_units"));
  d.logical_units = static_cast<int32_t>(num("logical_units"));
  if (!j.at("compute_capability").is_null()) {
    const std::string cc = j.at("compute_capability").get<std::string>();
    const auto dot = cc.find('.');
    d.capability_major = std::stoi(cc.substr(0, dot));
    d.capability_minor = dot == std::string::npos ? 0 : std::stoi(cc.substr(dot + 1));
  }
  d.precisions = mask_of(j.at("precisions"), kPrecisions);
  d.fast_precisions = mask_of(j.at("fast_precisions"), kPrecisions);
  d.limitations = mask_of(j.at("limitations"), kLimitations);
  d.recommended_threads = static_cast<int32_t>(num("recommended_threads"));
  d.score_hint = j.at("score_hint").get<int32_t>();
  d.features = join_features(j.at("features").get<std::vector<std::string>>());
  const json::object_t details = j.at("details").get<json::object_t>();  // type_error if not an object
  if (!details.empty()) d.details_json = json(details).dump();
  return d;
}

}  // namespace mlhost
