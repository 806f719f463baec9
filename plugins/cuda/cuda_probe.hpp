// Turns a CudaSnapshot into the plugin's device records. Pure: no driver calls, so every
// rule here is tested on made-up snapshots as well as through the stand-in driver.
#pragma once

#include <mlh/plugin.hpp>
#include <vector>

#include "cuda_snapshot.hpp"

namespace mlh::cuda {

// The oldest CUDA version the driver must support (cuDriverGetVersion encoding): what
// the LibTorch builds this project targets need, and the first with BF16/TF32 (Ampere).
constexpr int kMinimumCudaVersion = 11000;

// One record per GPU in the driver's order, so index i is LibTorch's "cuda:i" (the CUDA
// runtime in the worker enumerates as the driver does, CUDA_VISIBLE_DEVICES included).
// When CUDA cannot be used at all, exactly one unavailable record (index 0, "NVIDIA GPU",
// "cuda:0") whose reason says why, checked in this order:
//  - the driver library did not load: "no NVIDIA driver: libcuda.so.1 could not be loaded (...)";
//  - cuInit refused with CUDA_ERROR_NOT_PERMITTED, or failed while NVML reported
//    NVML_ERROR_NO_PERMISSION: "permission denied opening the NVIDIA device (...)";
//  - cuDriverGetVersion says the driver supports a CUDA older than 11.0, whether cuInit
//    worked or not: "NVIDIA driver too old: supports CUDA X.Y, need 11.0";
//  - cuInit (or cuDeviceGetCount) failed, or found no device: CUDA_ERROR_NO_DEVICE and zero
//    devices read "no NVIDIA GPU found", or "CUDA_VISIBLE_DEVICES="..." hides every GPU"
//    when that variable is set; other errors are named ("cuInit failed: CUDA_ERROR_UNKNOWN (999)").
// NVML only adds facts (free memory, the driver's version): without it they are unknown.
std::vector<DeviceInfo> probe_gpus(const CudaSnapshot& snapshot);

// What a GPU of compute capability major.minor runs (MLH_PRECISION_* bits):
//  - every CUDA GPU: FP32, FP64, FP16; BF16 and TF32 from 8.0 (Ampere), where LibTorch
//    enables them;
//  - fast: FP32 always; FP16 from 7.0 (tensor cores: where fp16 autocast pays off; the
//    P100's double-rate fp16 without tensor cores is not counted); BF16 and TF32 from 8.0;
//    FP64 on the data-centre parts with half-rate double precision (6.0, 7.0, 8.0, 9.0,
//    10.0), not on the gaming and workstation ones (1/32 or 1/64 rate).
uint32_t precisions_for(int major, int minor);
uint32_t fast_precisions_for(int major, int minor);

}  // namespace mlh::cuda
