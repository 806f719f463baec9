// Compiled only where the CUDA toolkit's headers are found: checks at compile time that
// the plugin's own declarations (cuda_api.hpp) agree with cuda.h, and with nvml.h when it
// is there too. The plugin itself never includes them, so it builds without CUDA.
#include <cuda.h>

#include <type_traits>

#include "cuda_api.hpp"

namespace m = mlh::cuda;

// Enums cross the C ABI as int: the plugin declares them so.
static_assert(sizeof(::CUresult) == sizeof(m::CUresult));
static_assert(sizeof(::CUdevice_attribute) == sizeof(m::CUdevice_attribute));
static_assert(std::is_same_v<::CUdevice, m::CUdevice>);
static_assert(sizeof(::CUuuid) == sizeof(m::CUuuid));

static_assert(m::CUDA_SUCCESS == ::CUDA_SUCCESS);
static_assert(m::CUDA_ERROR_STUB_LIBRARY == ::CUDA_ERROR_STUB_LIBRARY);
static_assert(m::CUDA_ERROR_NO_DEVICE == ::CUDA_ERROR_NO_DEVICE);
static_assert(m::CUDA_ERROR_NOT_PERMITTED == ::CUDA_ERROR_NOT_PERMITTED);
static_assert(m::CUDA_ERROR_SYSTEM_DRIVER_MISMATCH == ::CUDA_ERROR_SYSTEM_DRIVER_MISMATCH);
static_assert(m::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT == ::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
static_assert(m::CU_DEVICE_ATTRIBUTE_INTEGRATED == ::CU_DEVICE_ATTRIBUTE_INTEGRATED);
static_assert(m::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID == ::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
static_assert(m::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID == ::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
static_assert(m::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID == ::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
static_assert(m::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR == ::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
static_assert(m::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR == ::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);

// The signatures, with cuda.h's own types (the plugin's differ only in spelling the enums int).
static_assert(std::is_same_v<decltype(&::cuInit), CUresult (*)(unsigned int)>);
static_assert(std::is_same_v<decltype(&::cuDriverGetVersion), CUresult (*)(int*)>);
static_assert(std::is_same_v<decltype(&::cuDeviceGetCount), CUresult (*)(int*)>);
static_assert(std::is_same_v<decltype(&::cuDeviceGet), CUresult (*)(CUdevice*, int)>);
static_assert(std::is_same_v<decltype(&::cuDeviceGetName), CUresult (*)(char*, int, CUdevice)>);
static_assert(std::is_same_v<decltype(&::cuDeviceGetUuid_v2), CUresult (*)(CUuuid*, CUdevice)>);
static_assert(std::is_same_v<decltype(&::cuDeviceTotalMem_v2), CUresult (*)(size_t*, CUdevice)>);
static_assert(std::is_same_v<decltype(&::cuDeviceGetAttribute), CUresult (*)(int*, CUdevice_attribute, CUdevice)>);
static_assert(std::is_same_v<decltype(&::cuGetErrorName), CUresult (*)(CUresult, const char**)>);

#if __has_include(<nvml.h>)
#include <nvml.h>
static_assert(sizeof(::nvmlReturn_t) == sizeof(m::nvmlReturn_t));
static_assert(sizeof(::nvmlMemory_t) == sizeof(m::nvmlMemory_t));
static_assert(sizeof(::nvmlUtilization_t) == sizeof(m::nvmlUtilization_t));
static_assert(m::NVML_SUCCESS == ::NVML_SUCCESS);
static_assert(m::NVML_ERROR_NO_PERMISSION == ::NVML_ERROR_NO_PERMISSION);
static_assert(m::NVML_TEMPERATURE_GPU == ::NVML_TEMPERATURE_GPU);
static_assert(m::NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE == NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE);
static_assert(std::is_same_v<decltype(&::nvmlInit_v2), nvmlReturn_t (*)()>);
static_assert(std::is_same_v<decltype(&::nvmlSystemGetDriverVersion), nvmlReturn_t (*)(char*, unsigned int)>);
static_assert(std::is_same_v<decltype(&::nvmlDeviceGetHandleByUUID), nvmlReturn_t (*)(const char*, nvmlDevice_t*)>);
static_assert(
    std::is_same_v<decltype(&::nvmlDeviceGetHandleByPciBusId_v2), nvmlReturn_t (*)(const char*, nvmlDevice_t*)>);
static_assert(std::is_same_v<decltype(&::nvmlDeviceGetMemoryInfo), nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*)>);
static_assert(
    std::is_same_v<decltype(&::nvmlDeviceGetUtilizationRates), nvmlReturn_t (*)(nvmlDevice_t, nvmlUtilization_t*)>);
static_assert(std::is_same_v<decltype(&::nvmlDeviceGetTemperature),
                             nvmlReturn_t (*)(nvmlDevice_t, nvmlTemperatureSensors_t, unsigned int*)>);
static_assert(std::is_same_v<decltype(&::nvmlDeviceGetPowerUsage), nvmlReturn_t (*)(nvmlDevice_t, unsigned int*)>);
#endif
