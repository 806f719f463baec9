// The one place for differences between the LibTorch versions the runtime builds against:
// Debian's CPU-only 1.13 and CUDA-enabled 2.x from a PyTorch wheel.
#pragma once

#include <torch/version.h>

#define MLH_TORCH_VERSION_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))
