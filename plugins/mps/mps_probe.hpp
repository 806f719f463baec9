// Turns a MacSnapshot into the one MPS device record. Pure: no system access, so every
// rule here is tested on recorded machines (tests/mps/fixtures) on any OS.
#pragma once

#include <mlh/plugin.hpp>

#include "mps_snapshot.hpp"

namespace mlh::mps {

// Always exactly one record: kind "mps", index 0, class UNIFIED_GPU, torch device "mps",
// vendor "Apple". It is available when LibTorch's MPS backend can run:
//  - macOS (uname "Darwin"), else: "MPS needs macOS 12.3+ on Apple Silicon (this is Linux)";
//  - Apple Silicon: hw.optional.arm64 is 1 or the brand string starts with "Apple " (either
//    one, since a process under Rosetta sees uname "x86_64" on Apple hardware), else:
//    "MPS needs Apple Silicon (this Mac has an Intel CPU: <brand>)";
//  - macOS 12.3 or later, the first release PyTorch's MPS backend supports, else:
//    "MPS needs macOS 12.3 or later (this is macOS 12.1)". The hardware reason comes
//    first: no upgrade helps an Intel Mac.
// An unavailable record is named "Apple GPU (MPS)", has no precisions and no memory
// figures; on a Mac it still carries the macOS version and details_json. An available
// record:
//  - name "<chip> GPU" (e.g. "Apple M2 Max GPU"), so it reads apart from the CPU record
//    of the same chip;
//  - memory_total_bytes = hw.memsize, memory_unified; memory_free_bytes = free pages x
//    page size (vm.page_free_count x vm.pagesize): pages free right now, an underestimate
//    because macOS keeps reclaimable file cache in RAM, which is the safe side for
//    planning. Unknown when either value is missing;
//  - compute_units unknown: the GPU core count is in the IORegistry, which needs IOKit;
//  - precisions fp32 and fp16, plus bf16 from macOS 14 (MPS has no bfloat16 before
//    Sonoma); fast_precisions fp32 only: without fp16 autocast nothing else is a speed-up
//    the host can use;
//  - limitations no_distributed (no NCCL or Gloo for MPS tensors), no_fp16_autocast,
//    no_graph_compile. Not no_memory_fraction: PyTorch's MPS allocator enforces one
//    (PYTORCH_MPS_HIGH_WATERMARK_RATIO, which prepare sets);
//  - driver_version and runtime_version: the macOS version, which ships Metal and MPS;
//  - details_json on every macOS record: macos_version, chip, apple_silicon, memsize and
//    architecture (uname machine), null where unknown.
DeviceInfo probe_mps(const MacSnapshot& snapshot);

}  // namespace mlh::mps
