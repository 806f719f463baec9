#include "cuda_system.hpp"

#include <cstdlib>
#include <cstring>

#include "cuda_format.hpp"

namespace mlh::cuda {
namespace {

FailedCall failed(const DriverApi& api, const std::string& call, CUresult result) {
  const char* name = nullptr;
  const bool named = api.cuGetErrorName && api.cuGetErrorName(result, &name) == CUDA_SUCCESS && name;
  return {call, result, named ? name : ""};
}

GpuFacts read_gpu(const Session& session, int ordinal) {
  const DriverApi& api = session.driver().api;
  GpuFacts g;
  CUdevice device = 0;
  if (CUresult r = api.cuDeviceGet(&device, ordinal); r != CUDA_SUCCESS) {
    g.failure = failed(api, "cuDeviceGet", r);
    return g;
  }
  char name[256] = {};
  if (api.cuDeviceGetName(name, sizeof name - 1, device) == CUDA_SUCCESS) g.name = name;
  CUuuid uuid{};
  if (api.cuDeviceGetUuid(&uuid, device) == CUDA_SUCCESS) {
    g.uuid.emplace();
    std::memcpy(g.uuid->data(), uuid.bytes, g.uuid->size());
  }
  size_t total = 0;
  if (api.cuDeviceTotalMem_v2(&total, device) == CUDA_SUCCESS) g.memory_total_bytes = static_cast<int64_t>(total);
  auto attribute = [&](CUdevice_attribute a) -> std::optional<int> {
    int value = 0;
    if (api.cuDeviceGetAttribute(&value, a, device) != CUDA_SUCCESS) return std::nullopt;
    return value;
  };
  g.capability_major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  g.capability_minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  g.multiprocessors = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  g.integrated = attribute(CU_DEVICE_ATTRIBUTE_INTEGRATED);
  g.pci_domain = attribute(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
  g.pci_bus = attribute(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
  g.pci_device = attribute(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);

  if (const NvmlApi* nvml = session.nvml()) {
    std::string uuid_text = g.uuid ? format_uuid(*g.uuid) : "";
    std::string pci_text =
        g.pci_domain && g.pci_bus && g.pci_device ? format_pci_bus_id(*g.pci_domain, *g.pci_bus, *g.pci_device) : "";
    if (std::optional<nvmlDevice_t> handle = session.find_nvml_device(uuid_text, pci_text, &g.nvml_matched_by)) {
      nvmlMemory_t memory{};
      if (nvml->nvmlDeviceGetMemoryInfo(*handle, &memory) == NVML_SUCCESS)
        g.memory_free_bytes = static_cast<int64_t>(memory.free);
    }
  }
  return g;
}

}  // namespace

CudaSnapshot read_snapshot(const Session& session) {
  CudaSnapshot s;
  s.driver_library = session.driver_name();
  s.nvml_library = session.nvml_name();
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES")) s.cuda_visible_devices = visible;

  s.nvml_init_result = session.nvml_init_result();
  if (const NvmlApi* nvml = session.nvml()) {
    char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
    if (nvml->nvmlSystemGetDriverVersion(version, sizeof version - 1) == NVML_SUCCESS) s.nvml_driver_version = version;
  } else {
    s.nvml_error = session.nvml_error();
  }

  const LoadedDriver& driver = session.driver();
  if (!driver.error.empty()) {
    s.driver_load_error = driver.error;
    return s;
  }
  const DriverApi& api = driver.api;
  int version = 0;
  if (api.cuDriverGetVersion(&version) == CUDA_SUCCESS) s.driver_version = version;
  if (CUresult r = api.cuInit(0); r != CUDA_SUCCESS) {
    s.init_failure = failed(api, "cuInit", r);
    return s;
  }
  int count = 0;
  if (CUresult r = api.cuDeviceGetCount(&count); r != CUDA_SUCCESS) {
    s.init_failure = failed(api, "cuDeviceGetCount", r);
    return s;
  }
  for (int i = 0; i < count; ++i) s.gpus.push_back(read_gpu(session, i));
  return s;
}

}  // namespace mlh::cuda
