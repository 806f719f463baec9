// The environment a plan needs before LibTorch starts on MPS.
#pragma once

#include <mlh/plugin.hpp>
#include <string>
#include <vector>

namespace mlh::mps {

// From the plan (a JSON object; docs/plan.md):
//  - PYTORCH_ENABLE_MPS_FALLBACK=1 always: an op that MPS lacks runs on the CPU instead
//    of failing the run;
//  - with "memory_fraction" f (a number in (0, 1]): PYTORCH_MPS_HIGH_WATERMARK_RATIO=f,
//    written with at most 3 decimals ("0.75", "1"). PyTorch reads it as a fraction of
//    Metal's recommended working set (about 2/3 to 3/4 of RAM on Apple Silicon), not of
//    hw.memsize, and "0" as "no limit", so a fraction below 0.0005 is written as "0.001".
//    PYTORCH_MPS_LOW_WATERMARK_RATIO gets the same value: PyTorch refuses to start when
//    the low watermark (default 1.4) is above the high one, and with both equal the
//    allocator starts collecting its cache at the limit itself.
// (The CPU side's threads and allocator are the host's: it sets them from the plan for every device.)
// A missing or null field sets nothing. Throws mlh::Error(MLH_ERR_INVALID_ARGUMENT) that
// names the field when the plan is not a JSON object or a value is out of range.
std::vector<EnvVar> mps_environment(const std::string& plan_json);

}  // namespace mlh::mps
