// What the NVIDIA driver and NVML said during one probe, captured in one struct so that
// the probe rules (cuda_probe.hpp) are tested on made-up answers as well as on live ones.
// Values are raw (result codes, byte arrays, integers): judging them is the rules' job.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cuda_api.hpp"

namespace mlh::cuda {

// A driver call that failed, with the name cuGetErrorName gives its result (may be empty).
struct FailedCall {
  std::string call;  // "cuInit", "cuDeviceGetCount", ...
  CUresult result = CUDA_SUCCESS;
  std::string result_name;
};

// One device as the driver API enumerates it; nullopt where a call failed.
struct GpuFacts {
  std::optional<FailedCall> failure;            // cuDeviceGet failed: nothing else is known
  std::optional<std::string> name;              // cuDeviceGetName
  std::optional<std::array<uint8_t, 16>> uuid;  // cuDeviceGetUuid(_v2)
  std::optional<int64_t> memory_total_bytes;    // cuDeviceTotalMem_v2
  std::optional<int> capability_major, capability_minor, multiprocessors, integrated;
  std::optional<int> pci_domain, pci_bus, pci_device;
  // From NVML, for the device found by UUID, else by PCI bus id.
  std::optional<int64_t> memory_free_bytes;
  std::string nvml_matched_by;  // "uuid", "pci_bus_id", or empty when NVML did not find it
};

struct CudaSnapshot {
  std::string driver_library;                       // the name or path given to dlopen
  std::optional<std::string> driver_load_error;     // why it did not load (dlerror, missing symbol)
  std::optional<int> driver_version;                // cuDriverGetVersion: 12040 for CUDA 12.4
  std::optional<FailedCall> init_failure;           // cuInit or cuDeviceGetCount failed
  std::vector<GpuFacts> gpus;                       // in driver order: index i is torch cuda:i
  std::optional<std::string> cuda_visible_devices;  // the variable as this process sees it

  std::string nvml_library;
  std::optional<std::string> nvml_error;           // why NVML gave nothing (did not load, or init failed)
  std::optional<nvmlReturn_t> nvml_init_result;    // set once the library loaded
  std::optional<std::string> nvml_driver_version;  // nvmlSystemGetDriverVersion: "550.54.15"
};

}  // namespace mlh::cuda
