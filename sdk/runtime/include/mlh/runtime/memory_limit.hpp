// The plan's memory limit on the CPU: LibTorch's CPU allocator capped, so that running out of
// memory is an allocation error inside the worker (c10::OutOfMemoryError, as CUDA's allocator
// raises under its memory fraction) that the runtime can back off from (oom_backoff.hpp),
// not the kernel's OOM killer ending the whole process, or another one.
//
// What it counts: the bytes of live CPU tensor storage, as LibTorch's CPU allocator hands them
// out (c10::GetCPUAllocator(); every at::empty on the CPU). Not counted: code and libraries,
// thread stacks, oneDNN's scratch buffers, the allocator's own reserve (jemalloc or glibc may
// keep freed pages), other heap memory. It is a cap on what training allocates, not on the
// process's resident memory (docs/plan.md). apply_plan() sets it from plan.memory_limit_bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace mlh::rt {

// Caps CPU tensor memory at `bytes` from now on (nothing: no cap). Tensors already allocated
// count toward it once the cap is in place only as they are allocated anew.
void set_cpu_memory_limit(std::optional<int64_t> bytes);
std::optional<int64_t> cpu_memory_limit();

// Bytes of CPU tensor storage allocated through the cap and not yet freed, and the most at
// once since the last reset (zero before a cap was set).
int64_t cpu_memory_in_use();
int64_t cpu_memory_peak();
void reset_cpu_memory_peak();

// "3.10 GiB": how the limit's messages write a byte count.
std::string format_gib(int64_t bytes);

}  // namespace mlh::rt
