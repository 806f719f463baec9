// How the plugin writes the driver's raw identifiers and versions, in the forms that
// nvidia-smi, NVML, CUDA_VISIBLE_DEVICES and lspci use.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace mlh::cuda {

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", lowercase hex: what NVML and
// CUDA_VISIBLE_DEVICES accept.
std::string format_uuid(const std::array<uint8_t, 16>& bytes);

// "0000:3b:00.0" (domain:bus:device.function; CUDA devices are function 0).
std::string format_pci_bus_id(int domain, int bus, int device);

// The CUDA version in cuDriverGetVersion's encoding (1000 * major + 10 * minor) as
// "12.4"; 12040 -> "12.4", 11000 -> "11.0".
std::string cuda_version_text(int version);

}  // namespace mlh::cuda
