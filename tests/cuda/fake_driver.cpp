// A stand-in for the NVIDIA driver's libcuda.so.1 and libnvidia-ml.so.1: exports, with C
// linkage and the real signatures, the cu* and nvml* entry points the CUDA plugin calls,
// and answers them from the JSON machine description named by MLH_FAKE_GPUS (see
// fixtures/README.md). One library serves as both; the tests point MLH_CUDA_DRIVER_LIBRARY
// and MLH_NVML_LIBRARY at it.
//
// Unlike the real driver, which fixes its device list at the first cuInit of a process,
// the fake reads the fixture and CUDA_VISIBLE_DEVICES again at every cuInit and
// nvmlInit_v2, so that one test process can probe many machines.
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cuda_api.hpp"

using namespace mlh::cuda;

namespace {

using nlohmann::json;

// The results the fake gives that the plugin does not tell apart (cuda.h, nvml.h).
constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
constexpr CUresult CUDA_ERROR_NOT_INITIALIZED = 3;
constexpr CUresult CUDA_ERROR_INVALID_DEVICE = 101;
constexpr CUresult CUDA_ERROR_UNKNOWN = 999;
constexpr nvmlReturn_t NVML_ERROR_UNINITIALIZED = 1;
constexpr nvmlReturn_t NVML_ERROR_INVALID_ARGUMENT = 2;
constexpr nvmlReturn_t NVML_ERROR_NOT_SUPPORTED = 3;
constexpr nvmlReturn_t NVML_ERROR_NOT_FOUND = 6;
constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_SIZE = 7;
constexpr nvmlReturn_t NVML_ERROR_DRIVER_NOT_LOADED = 9;
constexpr nvmlReturn_t NVML_ERROR_UNKNOWN = 999;

struct Gpu {
  std::string name, uuid;
  int pci_domain = 0, pci_bus = 0, pci_device = 0;
  int capability_major = 0, capability_minor = 0, multiprocessors = 0;
  int64_t memory_total = 0;
  std::optional<int64_t> memory_free;
  std::optional<unsigned> utilization, temperature, power_milliwatts;
  bool integrated = false;
  bool nvml_finds_by_uuid = true;
};

struct Machine {
  int cuda_version = 12040;
  std::optional<CUresult> cuinit_error;
  std::string nvml_driver_version = "550.54.15";
  nvmlReturn_t nvml_init_error = NVML_SUCCESS;
  std::vector<Gpu> gpus;
  bool loaded = false;  // false: no fixture could be read, and both inits fail
};

Machine machine;
std::vector<size_t> visible;  // indices into machine.gpus, in CUDA order, fixed at cuInit
bool cuda_initialized = false;
int nvml_references = 0;  // nvmlInit_v2 counts, like the real one

template <class T>
std::optional<T> optional_field(const json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::nullopt;
  return it->get<T>();
}

Machine read_machine() {
  const char* path = std::getenv("MLH_FAKE_GPUS");
  if (!path) {
    std::fprintf(stderr, "fake NVIDIA driver: MLH_FAKE_GPUS is not set\n");
    return {};
  }
  std::ifstream in(path);
  json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    std::fprintf(stderr, "fake NVIDIA driver: %s is not a readable JSON object\n", path);
    return {};
  }
  Machine m;
  m.loaded = true;
  m.cuda_version = j.value("cuda_version", m.cuda_version);
  m.cuinit_error = optional_field<int>(j, "cuinit_error");
  const json nvml = j.value("nvml", json::object());
  m.nvml_driver_version = nvml.value("driver_version", m.nvml_driver_version);
  m.nvml_init_error = nvml.value("init_error", m.nvml_init_error);
  for (const json& g : j.value("gpus", json::array())) {
    Gpu gpu;
    gpu.name = g.at("name").get<std::string>();
    gpu.uuid = g.at("uuid").get<std::string>();
    unsigned domain = 0, bus = 0, device = 0, function = 0;
    if (std::sscanf(g.at("pci_bus_id").get<std::string>().c_str(), "%x:%x:%x.%x", &domain, &bus, &device, &function) !=
        4) {
      std::fprintf(stderr, "fake NVIDIA driver: bad pci_bus_id in %s\n", path);
      return {};
    }
    gpu.pci_domain = static_cast<int>(domain);
    gpu.pci_bus = static_cast<int>(bus);
    gpu.pci_device = static_cast<int>(device);
    gpu.capability_major = g.at("compute_capability").at(0).get<int>();
    gpu.capability_minor = g.at("compute_capability").at(1).get<int>();
    gpu.multiprocessors = g.at("multiprocessors").get<int>();
    gpu.memory_total = g.at("memory_total_bytes").get<int64_t>();
    gpu.memory_free = optional_field<int64_t>(g, "memory_free_bytes");
    gpu.utilization = optional_field<unsigned>(g, "utilization_percent");
    gpu.temperature = optional_field<unsigned>(g, "temperature_celsius");
    gpu.power_milliwatts = optional_field<unsigned>(g, "power_milliwatts");
    gpu.integrated = g.value("integrated", false);
    gpu.nvml_finds_by_uuid = g.value("nvml_finds_by_uuid", true);
    m.gpus.push_back(gpu);
  }
  return m;
}

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

bool starts_with_ignoring_case(const std::string& text, const std::string& prefix) {
  if (prefix.size() > text.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(text[i])) != std::tolower(static_cast<unsigned char>(prefix[i])))
      return false;
  return true;
}

// The GPU an entry of CUDA_VISIBLE_DEVICES names: a device index, or "GPU-" and a prefix
// of a UUID that only one GPU has. nullopt when it names none.
std::optional<size_t> named_gpu(const std::string& entry, const std::vector<Gpu>& gpus) {
  if (all_digits(entry)) {
    if (entry.size() > 9) return std::nullopt;
    size_t index = std::stoul(entry);
    return index < gpus.size() ? std::optional<size_t>(index) : std::nullopt;
  }
  if (entry.rfind("GPU-", 0) != 0) return std::nullopt;
  std::optional<size_t> found;
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (!starts_with_ignoring_case(gpus[i].uuid, entry)) continue;
    if (found) return std::nullopt;  // ambiguous
    found = i;
  }
  return found;
}

// CUDA_VISIBLE_DEVICES as the driver reads it: unset shows every GPU; otherwise a
// comma-separated list of entries (see named_gpu), in the order they give the devices,
// that ends at the first entry naming no GPU, or one already listed. So "0,bogus,1" shows
// GPU 0 only, and an empty value shows none.
std::vector<size_t> visible_gpus(const char* variable, const std::vector<Gpu>& gpus) {
  std::vector<size_t> shown;
  if (!variable) {
    for (size_t i = 0; i < gpus.size(); ++i) shown.push_back(i);
    return shown;
  }
  std::string value = variable;
  size_t start = 0;
  while (true) {
    size_t comma = value.find(',', start);
    std::string entry = value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    std::optional<size_t> gpu = named_gpu(entry, gpus);
    if (!gpu) break;
    for (size_t already : shown)
      if (already == *gpu) return shown;
    shown.push_back(*gpu);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return shown;
}

bool parse_uuid(const std::string& text, char out[16]) {
  std::string hex;
  for (char c : text.substr(text.rfind("GPU-", 0) == 0 ? 4 : 0))
    if (c != '-') hex += c;
  if (hex.size() != 32) return false;
  for (size_t i = 0; i < 16; ++i) out[i] = static_cast<char>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
  return true;
}

// The fixture GPU behind a CUdevice (an index into the visible list), or nullptr.
CUresult unknown_device() { return cuda_initialized ? CUDA_ERROR_INVALID_DEVICE : CUDA_ERROR_NOT_INITIALIZED; }

const Gpu* cuda_gpu(CUdevice device) {
  if (!cuda_initialized || device < 0 || static_cast<size_t>(device) >= visible.size()) return nullptr;
  return &machine.gpus[visible[static_cast<size_t>(device)]];
}

// NVML handles are fixture indices + 1 (never null), valid across fixture reloads.
nvmlDevice_t nvml_handle(size_t index) { return reinterpret_cast<nvmlDevice_t>(index + 1); }

nvmlReturn_t bad_nvml_call() { return nvml_references == 0 ? NVML_ERROR_UNINITIALIZED : NVML_ERROR_INVALID_ARGUMENT; }

const Gpu* nvml_gpu(nvmlDevice_t device) {
  const size_t index = reinterpret_cast<size_t>(device);
  if (nvml_references == 0 || index == 0 || index > machine.gpus.size()) return nullptr;
  return &machine.gpus[index - 1];
}

CUresult get_uuid(CUuuid* uuid, CUdevice dev) {
  const Gpu* gpu = cuda_gpu(dev);
  if (!gpu) return unknown_device();
  if (!uuid || !parse_uuid(gpu->uuid, uuid->bytes)) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

}  // namespace

// --- CUDA driver API ---------------------------------------------------------------------

extern "C" {

CUresult cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  machine = read_machine();
  if (!machine.loaded) return CUDA_ERROR_UNKNOWN;
  visible = visible_gpus(std::getenv("CUDA_VISIBLE_DEVICES"), machine.gpus);
  CUresult result = machine.cuinit_error.value_or(visible.empty() ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS);
  cuda_initialized = result == CUDA_SUCCESS;
  return result;
}

CUresult cuDriverGetVersion(int* version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  // Works before cuInit, like the real one: the version comes from the library itself.
  *version = read_machine().cuda_version;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* count) {
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  if (!cuda_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  *count = static_cast<int>(visible.size());
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (!cuda_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!cuda_gpu(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  const Gpu* gpu = cuda_gpu(dev);
  if (!gpu) return unknown_device();
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(name, static_cast<size_t>(len), "%s", gpu->name.c_str());
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) { return get_uuid(uuid, dev); }

CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) { return get_uuid(uuid, dev); }

CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  const Gpu* gpu = cuda_gpu(dev);
  if (!gpu) return unknown_device();
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  *bytes = static_cast<size_t>(gpu->memory_total);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attrib, CUdevice dev) {
  const Gpu* gpu = cuda_gpu(dev);
  if (!gpu) return unknown_device();
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *value = gpu->multiprocessors;
      break;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED:
      *value = gpu->integrated ? 1 : 0;
      break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
      *value = gpu->pci_bus;
      break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
      *value = gpu->pci_device;
      break;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
      *value = gpu->pci_domain;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *value = gpu->capability_major;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *value = gpu->capability_minor;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char** name) {
#define MLH_NAMED(code) \
  { code, #code }
  static const std::pair<CUresult, const char*> names[] = {MLH_NAMED(CUDA_SUCCESS),
                                                           MLH_NAMED(CUDA_ERROR_INVALID_VALUE),
                                                           MLH_NAMED(CUDA_ERROR_NOT_INITIALIZED),
                                                           MLH_NAMED(CUDA_ERROR_STUB_LIBRARY),
                                                           MLH_NAMED(CUDA_ERROR_NO_DEVICE),
                                                           MLH_NAMED(CUDA_ERROR_INVALID_DEVICE),
                                                           MLH_NAMED(CUDA_ERROR_NOT_PERMITTED),
                                                           MLH_NAMED(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH),
                                                           MLH_NAMED(CUDA_ERROR_UNKNOWN)};
#undef MLH_NAMED
  if (!name) return CUDA_ERROR_INVALID_VALUE;
  for (const auto& [code, text] : names)
    if (code == error) {
      *name = text;
      return CUDA_SUCCESS;
    }
  *name = nullptr;  // as the real one does for a code it does not know
  return CUDA_ERROR_INVALID_VALUE;
}

// --- NVML ----------------------------------------------------------------------------------

nvmlReturn_t nvmlInit_v2() {
  machine = read_machine();
  if (!machine.loaded) return NVML_ERROR_UNKNOWN;
  if (machine.nvml_init_error != NVML_SUCCESS) return machine.nvml_init_error;
  ++nvml_references;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown() {
  if (nvml_references == 0) return NVML_ERROR_UNINITIALIZED;
  --nvml_references;
  return NVML_SUCCESS;
}

const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    default:
      return "Unknown Error";
  }
}

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  if (nvml_references == 0) return NVML_ERROR_UNINITIALIZED;
  if (!version) return NVML_ERROR_INVALID_ARGUMENT;
  if (machine.nvml_driver_version.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(version, machine.nvml_driver_version.c_str(), machine.nvml_driver_version.size() + 1);
  return NVML_SUCCESS;
}

// NVML ignores CUDA_VISIBLE_DEVICES: these look at every GPU of the machine.
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  if (nvml_references == 0) return NVML_ERROR_UNINITIALIZED;
  if (!uuid || !device) return NVML_ERROR_INVALID_ARGUMENT;
  for (size_t i = 0; i < machine.gpus.size(); ++i)
    if (machine.gpus[i].nvml_finds_by_uuid && machine.gpus[i].uuid == uuid) {
      *device = nvml_handle(i);
      return NVML_SUCCESS;
    }
  return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* pci_bus_id, nvmlDevice_t* device) {
  if (nvml_references == 0) return NVML_ERROR_UNINITIALIZED;
  if (!pci_bus_id || !device) return NVML_ERROR_INVALID_ARGUMENT;
  // "domain:bus:device.function", or "bus:device.function" in domain 0, any hex case.
  unsigned domain = 0, bus = 0, dev = 0, function = 0;
  if (std::sscanf(pci_bus_id, "%x:%x:%x.%x", &domain, &bus, &dev, &function) != 4) {
    domain = 0;
    if (std::sscanf(pci_bus_id, "%x:%x.%x", &bus, &dev, &function) != 3) return NVML_ERROR_INVALID_ARGUMENT;
  }
  for (size_t i = 0; i < machine.gpus.size(); ++i) {
    const Gpu& g = machine.gpus[i];
    if (static_cast<unsigned>(g.pci_domain) == domain && static_cast<unsigned>(g.pci_bus) == bus &&
        static_cast<unsigned>(g.pci_device) == dev && function == 0) {
      *device = nvml_handle(i);
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  const Gpu* gpu = nvml_gpu(device);
  if (!gpu || !memory) return bad_nvml_call();
  if (!gpu->memory_free) return NVML_ERROR_NOT_SUPPORTED;
  memory->total = static_cast<unsigned long long>(gpu->memory_total);
  memory->free = static_cast<unsigned long long>(*gpu->memory_free);
  memory->used = memory->total - memory->free;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization) {
  const Gpu* gpu = nvml_gpu(device);
  if (!gpu || !utilization) return bad_nvml_call();
  if (!gpu->utilization) return NVML_ERROR_NOT_SUPPORTED;
  utilization->gpu = *gpu->utilization;
  utilization->memory = 0;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensor, unsigned int* temp) {
  const Gpu* gpu = nvml_gpu(device);
  if (!gpu || !temp || sensor != NVML_TEMPERATURE_GPU) return bad_nvml_call();
  if (!gpu->temperature) return NVML_ERROR_NOT_SUPPORTED;
  *temp = *gpu->temperature;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* milliwatts) {
  const Gpu* gpu = nvml_gpu(device);
  if (!gpu || !milliwatts) return bad_nvml_call();
  if (!gpu->power_milliwatts) return NVML_ERROR_NOT_SUPPORTED;
  *milliwatts = *gpu->power_milliwatts;
  return NVML_SUCCESS;
}

}  // extern "C"

// The fake's signatures are the plugin's (cuda_api.hpp), which cite cuda.h and nvml.h.
#define MLH_SAME_SIGNATURE(table, name) \
  static_assert(std::is_same_v<decltype(&name), decltype(table::name)>, #name " differs from " #table)
MLH_SAME_SIGNATURE(DriverApi, cuInit);
MLH_SAME_SIGNATURE(DriverApi, cuDriverGetVersion);
MLH_SAME_SIGNATURE(DriverApi, cuDeviceGetCount);
MLH_SAME_SIGNATURE(DriverApi, cuDeviceGet);
MLH_SAME_SIGNATURE(DriverApi, cuDeviceGetName);
MLH_SAME_SIGNATURE(DriverApi, cuDeviceGetUuid);
static_assert(std::is_same_v<decltype(&cuDeviceGetUuid_v2), decltype(DriverApi::cuDeviceGetUuid)>);
MLH_SAME_SIGNATURE(DriverApi, cuDeviceTotalMem_v2);
MLH_SAME_SIGNATURE(DriverApi, cuDeviceGetAttribute);
MLH_SAME_SIGNATURE(DriverApi, cuGetErrorName);
MLH_SAME_SIGNATURE(NvmlApi, nvmlInit_v2);
MLH_SAME_SIGNATURE(NvmlApi, nvmlShutdown);
MLH_SAME_SIGNATURE(NvmlApi, nvmlErrorString);
MLH_SAME_SIGNATURE(NvmlApi, nvmlSystemGetDriverVersion);
MLH_SAME_SIGNATURE(NvmlApi, nvmlDeviceGetHandleByUUID);
MLH_SAME_SIGNATURE(NvmlApi, nvmlDeviceGetHandleByPciBusId_v2);
MLH_SAME_SIGNATURE(NvmlApi, nvmlDeviceGetMemoryInfo);
MLH_SAME_SIGNATURE(NvmlApi, nvmlDeviceGetUtilizationRates);
MLH_SAME_SIGNATURE(NvmlApi, nvmlDeviceGetTemperature);
MLH_SAME_SIGNATURE(NvmlApi, nvmlDeviceGetPowerUsage);
