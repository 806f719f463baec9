// The few parts of the CUDA driver API (cuda.h, libcuda.so.1) and of NVML (nvml.h,
// libnvidia-ml.so.1) that the plugin calls, declared here rather than taken from the
// CUDA toolkit so that the plugin builds, and loads, on machines without CUDA. Names,
// values and signatures are the official ones; each is cited by its name in the headers
// (tests/cuda/cuda_api_check.cpp compares them with cuda.h wherever the toolkit is
// installed). Both libraries are opened with dlopen when a probe runs, never linked.
#pragma once

#include <cstddef>
#include <string>

namespace mlh::cuda {

// --- CUDA driver API (cuda.h) ---------------------------------------------------------

using CUresult = int;            // enum cudaError_enum
using CUdevice = int;            // CUdevice_v1
using CUdevice_attribute = int;  // enum CUdevice_attribute_enum
struct CUuuid {                  // struct CUuuid_st
  char bytes[16];
};

// The CUresult values (cudaError_enum) the probe rules tell apart.
constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_STUB_LIBRARY = 34;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
constexpr CUresult CUDA_ERROR_NOT_PERMITTED = 800;
constexpr CUresult CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803;

// CUdevice_attribute values (CUdevice_attribute_enum).
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_INTEGRATED = 18;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID = 50;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;

// The driver entry points, by their exported names. None of them creates a context.
struct DriverApi {
  CUresult (*cuInit)(unsigned int flags);
  CUresult (*cuDriverGetVersion)(int* driver_version);
  CUresult (*cuDeviceGetCount)(int* count);
  CUresult (*cuDeviceGet)(CUdevice* device, int ordinal);
  CUresult (*cuDeviceGetName)(char* name, int len, CUdevice dev);
  // cuDeviceGetUuid_v2 where exported (CUDA 11.4+), else cuDeviceGetUuid: they differ only
  // for MIG instances, where v2 gives the instance's UUID.
  CUresult (*cuDeviceGetUuid)(CUuuid* uuid, CUdevice dev);
  CUresult (*cuDeviceTotalMem_v2)(size_t* bytes, CUdevice dev);
  CUresult (*cuDeviceGetAttribute)(int* value, CUdevice_attribute attrib, CUdevice dev);
  // Optional: names errors in reasons ("CUDA_ERROR_UNKNOWN"); NULL when not exported.
  CUresult (*cuGetErrorName)(CUresult error, const char** name);
};

// --- NVML (nvml.h) --------------------------------------------------------------------

using nvmlReturn_t = int;              // enum nvmlReturn_enum
using nvmlTemperatureSensors_t = int;  // enum nvmlTemperatureSensors_enum
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlMemory_t {  // struct nvmlMemory_st (v1), bytes
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct nvmlUtilization_t {  // struct nvmlUtilization_st, percent
  unsigned int gpu;
  unsigned int memory;
};

constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr nvmlReturn_t NVML_ERROR_NO_PERMISSION = 4;
constexpr nvmlTemperatureSensors_t NVML_TEMPERATURE_GPU = 0;
constexpr unsigned int NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80;

struct NvmlApi {
  nvmlReturn_t (*nvmlInit_v2)();
  nvmlReturn_t (*nvmlShutdown)();
  const char* (*nvmlErrorString)(nvmlReturn_t result);
  nvmlReturn_t (*nvmlSystemGetDriverVersion)(char* version, unsigned int length);
  nvmlReturn_t (*nvmlDeviceGetHandleByUUID)(const char* uuid, nvmlDevice_t* device);
  nvmlReturn_t (*nvmlDeviceGetHandleByPciBusId_v2)(const char* pci_bus_id, nvmlDevice_t* device);
  nvmlReturn_t (*nvmlDeviceGetMemoryInfo)(nvmlDevice_t device, nvmlMemory_t* memory);
  nvmlReturn_t (*nvmlDeviceGetUtilizationRates)(nvmlDevice_t device, nvmlUtilization_t* utilization);
  nvmlReturn_t (*nvmlDeviceGetTemperature)(nvmlDevice_t device, nvmlTemperatureSensors_t sensor, unsigned int* temp);
  nvmlReturn_t (*nvmlDeviceGetPowerUsage)(nvmlDevice_t device, unsigned int* milliwatts);
};

// --- Loading ---------------------------------------------------------------------------

// A dlopen'ed library. Move-only; closing it only drops the reference (see open_library).
class SharedLibrary {
 public:
  SharedLibrary() = default;
  SharedLibrary(SharedLibrary&& other) noexcept;
  SharedLibrary& operator=(SharedLibrary&& other) noexcept;
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;
  ~SharedLibrary();

  // Opens `name` (a soname searched as dlopen does, or a path). On failure the library is
  // not open and `error` holds dlerror()'s text.
  static SharedLibrary open(const std::string& name, std::string& error);
  bool is_open() const { return handle_ != nullptr; }
  void* symbol(const char* name) const;

 private:
  explicit SharedLibrary(void* handle) : handle_(handle) {}
  void* handle_ = nullptr;
};

// The library a probe opens: MLH_CUDA_DRIVER_LIBRARY / MLH_NVML_LIBRARY when set and not
// empty, else the sonames the NVIDIA driver installs. Read at each call, not at load time.
std::string driver_library_name();
std::string nvml_library_name();

// A loaded driver or NVML library with its entry points resolved; `error` is set, and
// nothing else may be used, when the library did not open or lacks a required symbol.
struct LoadedDriver {
  SharedLibrary library;
  DriverApi api{};
  std::string error;
};
struct LoadedNvml {
  SharedLibrary library;
  NvmlApi api{};
  std::string error;
};
LoadedDriver load_driver(const std::string& name);
LoadedNvml load_nvml(const std::string& name);

}  // namespace mlh::cuda
