// The probe rules on made-up snapshots: formats, precisions by compute capability, the
// order of the reasons, and what stays unknown.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cuda_format.hpp"
#include "cuda_probe.hpp"

namespace {

using namespace mlh::cuda;
using mlh::DeviceInfo;

// cuda.h values the plugin does not name.
constexpr CUresult kInvalidDevice = 101;  // CUDA_ERROR_INVALID_DEVICE
constexpr CUresult kUnknownError = 999;   // CUDA_ERROR_UNKNOWN

constexpr uint32_t kFp32 = MLH_PRECISION_FP32, kFp16 = MLH_PRECISION_FP16, kBf16 = MLH_PRECISION_BF16,
                   kTf32 = MLH_PRECISION_TF32, kFp64 = MLH_PRECISION_FP64;

GpuFacts a100() {
  GpuFacts g;
  g.name = "NVIDIA A100-SXM4-40GB";
  g.uuid = std::array<uint8_t, 16>{0x5a, 0x1c, 0x9e, 0x2d, 0x7b, 0x3f, 0x4c, 0x8a,
                                   0x9e, 0x6d, 0x0f, 0x1a, 0x2b, 0x3c, 0x4d, 0x5e};
  g.memory_total_bytes = 42298834944;
  g.capability_major = 8;
  g.capability_minor = 0;
  g.multiprocessors = 108;
  g.integrated = 0;
  g.pci_domain = 0;
  g.pci_bus = 0x3b;
  g.pci_device = 0;
  g.memory_free_bytes = 41875406848;
  g.nvml_matched_by = "uuid";
  return g;
}

CudaSnapshot working(std::vector<GpuFacts> gpus) {
  CudaSnapshot s;
  s.driver_library = "libcuda.so.1";
  s.nvml_library = "libnvidia-ml.so.1";
  s.driver_version = 12040;
  s.nvml_init_result = NVML_SUCCESS;
  s.nvml_driver_version = "550.54.15";
  s.gpus = std::move(gpus);
  return s;
}

std::string reason_of(const CudaSnapshot& s) {
  std::vector<DeviceInfo> records = probe_gpus(s);
  EXPECT_EQ(records.size(), 1u);
  EXPECT_FALSE(records.at(0).available);
  return records.at(0).unavailable_reason;
}

TEST(CudaFormat, UuidPciAndVersion) {
  EXPECT_EQ(format_uuid(*a100().uuid), "GPU-5a1c9e2d-7b3f-4c8a-9e6d-0f1a2b3c4d5e");
  EXPECT_EQ(format_pci_bus_id(0, 0x3b, 0), "0000:3b:00.0");
  EXPECT_EQ(format_pci_bus_id(0x10002, 0xc1, 0x1f), "10002:c1:1f.0");
  EXPECT_EQ(cuda_version_text(12040), "12.4");
  EXPECT_EQ(cuda_version_text(11000), "11.0");
  EXPECT_EQ(cuda_version_text(13000), "13.0");
  EXPECT_EQ(cuda_version_text(10020), "10.2");
}

TEST(CudaPrecisions, ByComputeCapability) {
  struct Case {
    int major, minor;
    uint32_t all, fast;
  };
  const uint32_t classic = kFp32 | kFp64 | kFp16, ampere = classic | kBf16 | kTf32;
  for (const Case& c : std::vector<Case>{{3, 5, classic, kFp32},                  // Kepler K40
                                         {6, 0, classic, kFp32 | kFp64},          // P100: no tensor cores
                                         {6, 1, classic, kFp32},                  // GTX 1080
                                         {7, 0, classic, kFp32 | kFp16 | kFp64},  // V100
                                         {7, 5, classic, kFp32 | kFp16},          // T4, RTX 20xx
                                         {8, 0, ampere, kFp32 | kFp16 | kBf16 | kTf32 | kFp64},   // A100
                                         {8, 6, ampere, kFp32 | kFp16 | kBf16 | kTf32},           // RTX 30xx
                                         {8, 9, ampere, kFp32 | kFp16 | kBf16 | kTf32},           // L4, RTX 40xx
                                         {9, 0, ampere, kFp32 | kFp16 | kBf16 | kTf32 | kFp64},   // H100
                                         {10, 0, ampere, kFp32 | kFp16 | kBf16 | kTf32 | kFp64},  // B200
                                         {12, 0, ampere, kFp32 | kFp16 | kBf16 | kTf32}}) {       // RTX 50xx
    EXPECT_EQ(precisions_for(c.major, c.minor), c.all) << c.major << "." << c.minor;
    EXPECT_EQ(fast_precisions_for(c.major, c.minor), c.fast) << c.major << "." << c.minor;
  }
}

TEST(CudaProbeRules, AWorkingGpu) {
  std::vector<DeviceInfo> records = probe_gpus(working({a100()}));
  ASSERT_EQ(records.size(), 1u);
  const DeviceInfo& d = records[0];
  EXPECT_TRUE(d.available);
  EXPECT_EQ(d.device_class, MLH_DEVICE_CLASS_DISCRETE_GPU);
  EXPECT_EQ(d.uuid, "GPU-5a1c9e2d-7b3f-4c8a-9e6d-0f1a2b3c4d5e");
  EXPECT_EQ(d.pci_bus_id, "0000:3b:00.0");
  EXPECT_EQ(d.driver_version, "550.54.15");
  EXPECT_EQ(d.runtime_version, "12.4");
  EXPECT_EQ(d.memory_free_bytes, 41875406848);
  EXPECT_EQ(d.features, "sm_80,tensor_cores");
  nlohmann::json details = nlohmann::json::parse(d.details_json);
  EXPECT_EQ(details["gpu_count"], 1);
  EXPECT_EQ(details["pci_bus"], 0x3b);
  EXPECT_EQ(details["nvml_matched_by"], "uuid");
  EXPECT_TRUE(details["cuda_visible_devices"].is_null());
}

TEST(CudaProbeRules, WhatNoCallAnsweredStaysUnknown) {
  GpuFacts nothing;
  CudaSnapshot s = working({nothing});
  s.nvml_driver_version.reset();
  std::vector<DeviceInfo> records = probe_gpus(s);
  ASSERT_EQ(records.size(), 1u);
  const DeviceInfo& d = records[0];
  EXPECT_TRUE(d.available);
  EXPECT_EQ(d.name, "NVIDIA GPU");
  EXPECT_EQ(d.uuid, "");
  EXPECT_EQ(d.pci_bus_id, "");
  EXPECT_EQ(d.capability_major, MLH_UNKNOWN);
  EXPECT_EQ(d.compute_units, MLH_UNKNOWN);
  EXPECT_EQ(d.memory_total_bytes, MLH_UNKNOWN);
  EXPECT_EQ(d.memory_free_bytes, MLH_UNKNOWN);
  EXPECT_EQ(d.driver_version, "CUDA 12.4");
  EXPECT_EQ(d.precisions, kFp32 | kFp64 | kFp16);  // what every CUDA GPU runs
  EXPECT_EQ(d.fast_precisions, kFp32);
  EXPECT_EQ(d.features, "");
}

// NVML's total includes memory the driver reserves; free never exceeds the driver's total.
TEST(CudaProbeRules, FreeMemoryIsCappedByTheDriversTotal) {
  GpuFacts g = a100();
  g.memory_free_bytes = *g.memory_total_bytes + 500'000'000;
  EXPECT_EQ(probe_gpus(working({g}))[0].memory_free_bytes, *g.memory_total_bytes);
}

TEST(CudaProbeRules, AnIntegratedGpuSharesMemory) {
  GpuFacts g = a100();
  g.integrated = 1;
  DeviceInfo d = probe_gpus(working({g}))[0];
  EXPECT_EQ(d.device_class, MLH_DEVICE_CLASS_UNIFIED_GPU);
  EXPECT_TRUE(d.memory_unified);
}

TEST(CudaProbeRules, AGpuTheDriverCannotOpenKeepsItsIndex) {
  GpuFacts broken;
  broken.failure = FailedCall{"cuDeviceGet", kInvalidDevice, "CUDA_ERROR_INVALID_DEVICE"};
  std::vector<DeviceInfo> records = probe_gpus(working({broken, a100()}));
  ASSERT_EQ(records.size(), 2u);
  EXPECT_FALSE(records[0].available);
  EXPECT_EQ(records[0].unavailable_reason, "cuDeviceGet(0) failed: CUDA_ERROR_INVALID_DEVICE (101)");
  EXPECT_EQ(records[0].torch_device, "cuda:0");
  EXPECT_TRUE(records[1].available);
  EXPECT_EQ(records[1].torch_device, "cuda:1");
}

TEST(CudaProbeRules, ReasonsInOrder) {
  CudaSnapshot s = working({a100()});
  s.driver_load_error = "libcuda.so.1: cannot open shared object file: No such file or directory";
  s.init_failure = FailedCall{"cuInit", CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED"};
  s.driver_version = 10020;
  // A library that did not load explains everything else.
  EXPECT_EQ(reason_of(s),
            "no NVIDIA driver: libcuda.so.1 could not be loaded (libcuda.so.1: cannot open shared object file: No "
            "such file or directory)");
  s.driver_load_error.reset();
  // No permission makes every other answer unreliable.
  EXPECT_EQ(reason_of(s), "permission denied opening the NVIDIA device (are you in the video group?)");
  s.init_failure->result = CUDA_ERROR_NO_DEVICE;
  s.nvml_init_result = NVML_ERROR_NO_PERMISSION;
  EXPECT_EQ(reason_of(s), "permission denied opening the NVIDIA device (are you in the video group?)");
  s.nvml_init_result = NVML_SUCCESS;
  // An old driver is named even though cuInit failed.
  EXPECT_EQ(reason_of(s), "NVIDIA driver too old: supports CUDA 10.2, need 11.0");
  s.driver_version = 11000;
  EXPECT_EQ(reason_of(s), "no NVIDIA GPU found");
  s.cuda_visible_devices = "3";
  EXPECT_EQ(reason_of(s), "CUDA_VISIBLE_DEVICES=\"3\" hides every GPU");
}

TEST(CudaProbeRules, TooOldEvenWhenCuInitWorks) {
  CudaSnapshot s = working({a100()});
  s.driver_version = 10010;
  EXPECT_EQ(reason_of(s), "NVIDIA driver too old: supports CUDA 10.1, need 11.0");
}

TEST(CudaProbeRules, PermissionTroubleOnlyInNvmlIsNotAReason) {
  CudaSnapshot s = working({a100()});
  s.nvml_init_result = NVML_ERROR_NO_PERMISSION;
  s.nvml_error = "nvmlInit_v2 failed: Insufficient Permissions (4)";
  std::vector<DeviceInfo> records = probe_gpus(s);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_TRUE(records[0].available);
  EXPECT_EQ(nlohmann::json::parse(records[0].details_json)["nvml"], "nvmlInit_v2 failed: Insufficient Permissions (4)");
}

TEST(CudaProbeRules, EnumerationFailuresAreNamed) {
  CudaSnapshot s = working({});
  s.init_failure = FailedCall{"cuDeviceGetCount", kUnknownError, ""};
  EXPECT_EQ(reason_of(s), "cuDeviceGetCount failed: error (999)");
  nlohmann::json details = nlohmann::json::parse(probe_gpus(s)[0].details_json);
  EXPECT_EQ(details["failed_call"], "cuDeviceGetCount");
  EXPECT_EQ(details["result"], 999);
  EXPECT_EQ(details["gpu_count"], 0);
}

TEST(CudaProbeRules, ZeroGpusAfterASuccessfulInit) {
  EXPECT_EQ(reason_of(working({})), "no NVIDIA GPU found");
  CudaSnapshot s = working({});
  s.cuda_visible_devices = "";
  EXPECT_EQ(reason_of(s), "CUDA_VISIBLE_DEVICES=\"\" hides every GPU");
}

}  // namespace
