// The live reader: asks the driver and NVML of a Session for everything the probe rules
// look at. Creates no CUDA context (cuInit and device queries only).
#pragma once

#include "cuda_session.hpp"
#include "cuda_snapshot.hpp"

namespace mlh::cuda {

CudaSnapshot read_snapshot(const Session& session);

}  // namespace mlh::cuda
