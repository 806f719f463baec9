// The one-CPU-like device the correct test plugins report, so each case shows only what
// makes it different.
#pragma once

#include <mlh/plugin.hpp>

#include <string>

namespace mlh::testing {

inline DeviceInfo simple_device(const std::string& kind, const std::string& name,
                                int32_t device_class = MLH_DEVICE_CLASS_CPU) {
  DeviceInfo d;
  d.device_class = device_class;
  d.kind = kind;
  d.name = name;
  d.vendor = "mlhost tests";
  d.torch_device = "cpu";
  d.memory_unified = true;
  d.compute_units = 1;
  d.logical_units = 1;
  d.recommended_threads = 1;
  d.precisions = MLH_PRECISION_FP32;
  d.fast_precisions = MLH_PRECISION_FP32;
  return d;
}

}  // namespace mlh::testing
