// The memory a training process holds on a Mac, for telemetry.
#pragma once

#include <cstdint>

namespace mlh::mps {

// The physical footprint of process `pid` in bytes: its resident memory plus what Metal
// holds for it (GPU buffers live in the same RAM on Apple Silicon), the figure Activity
// Monitor shows as "Memory". Read with proc_pid_rusage(3) from libproc, part of libSystem,
// so no framework is linked. Throws mlh::Error: MLH_ERR_INVALID_ARGUMENT ("no process
// <pid>") when there is no such process, MLH_ERR_UNAVAILABLE when it cannot be read, and
// MLH_ERR_UNSUPPORTED on every OS but macOS.
int64_t process_footprint_bytes(int64_t pid);

}  // namespace mlh::mps
