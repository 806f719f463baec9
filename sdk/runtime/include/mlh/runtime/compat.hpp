// The one place for differences between the LibTorch versions the runtime builds against:
// Debian's CPU-only 1.13 and CUDA-enabled 2.x from a PyTorch wheel.
#pragma once

#include <torch/version.h>

#define MLH_TORCH_VERSION_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

// Whether LibTorch was built with CUDA, known at compile time so that CUDA-only headers are
// included only where they exist. Debian's CPU-only 1.13 ships no ATen/cuda/CUDAConfig.h
// (and defines no AT_CUDA_ENABLED); every 2.x build has it, with AT_CUDA_ENABLED() 0 or 1.
#if __has_include(<ATen/cuda/CUDAConfig.h>)
#include <ATen/cuda/CUDAConfig.h>
#define MLH_TORCH_HAS_CUDA AT_CUDA_ENABLED()
#else
#define MLH_TORCH_HAS_CUDA 0
#endif

// Autocast switches per device type. 2.4 added device-type functions and deprecated the
// per-device ones (set_enabled for CUDA, set_cpu_enabled, set_autocast_gpu_dtype, ...) that
// 1.13 only has.
#include <ATen/autocast_mode.h>

namespace mlh::rt::compat {

inline bool autocast_enabled(c10::DeviceType device) {
#if MLH_TORCH_VERSION_AT_LEAST(2, 4)
  return at::autocast::is_autocast_enabled(device);
#else
  return device == c10::DeviceType::CUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}

inline void set_autocast_enabled(c10::DeviceType device, bool enabled) {
#if MLH_TORCH_VERSION_AT_LEAST(2, 4)
  at::autocast::set_autocast_enabled(device, enabled);
#else
  if (device == c10::DeviceType::CUDA)
    at::autocast::set_enabled(enabled);
  else
    at::autocast::set_cpu_enabled(enabled);
#endif
}

inline at::ScalarType autocast_dtype(c10::DeviceType device) {
#if MLH_TORCH_VERSION_AT_LEAST(2, 4)
  return at::autocast::get_autocast_dtype(device);
#else
  return device == c10::DeviceType::CUDA ? at::autocast::get_autocast_gpu_dtype()
                                         : at::autocast::get_autocast_cpu_dtype();
#endif
}

inline void set_autocast_dtype(c10::DeviceType device, at::ScalarType dtype) {
#if MLH_TORCH_VERSION_AT_LEAST(2, 4)
  at::autocast::set_autocast_dtype(device, dtype);
#else
  if (device == c10::DeviceType::CUDA)
    at::autocast::set_autocast_gpu_dtype(dtype);
  else
    at::autocast::set_autocast_cpu_dtype(dtype);
#endif
}

}  // namespace mlh::rt::compat
