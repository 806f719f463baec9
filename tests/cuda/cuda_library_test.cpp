// The built plugin through the C ABI, as the host loads it, against the stand-in driver
// library under each fixture machine: every record field, CUDA_VISIBLE_DEVICES, the
// reasons of each unusable case, prepare and telemetry.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include "cuda_harness.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace {

using namespace mlh::cuda_test;
using mlh::DeviceInfo;

constexpr uint32_t kFp32 = MLH_PRECISION_FP32, kFp16 = MLH_PRECISION_FP16, kBf16 = MLH_PRECISION_BF16,
                   kTf32 = MLH_PRECISION_TF32, kFp64 = MLH_PRECISION_FP64;

// The precision bits each fixture GPU must get, written out by hand (not by the plugin's rule).
struct Precisions {
  uint32_t all, fast;
};
Precisions expected_precisions(const std::string& gpu_name) {
  if (gpu_name == "NVIDIA A100-SXM4-40GB")  // cc 8.0: tensor cores with bf16/tf32, half-rate fp64
    return {kFp32 | kFp64 | kFp16 | kBf16 | kTf32, kFp32 | kFp16 | kBf16 | kTf32 | kFp64};
  if (gpu_name == "NVIDIA GeForce RTX 3060" || gpu_name == "Orin")  // cc 8.6 / 8.7: slow fp64
    return {kFp32 | kFp64 | kFp16 | kBf16 | kTf32, kFp32 | kFp16 | kBf16 | kTf32};
  if (gpu_name == "Tesla V100-SXM2-16GB")  // cc 7.0: fp16 tensor cores, no bf16/tf32
    return {kFp32 | kFp64 | kFp16, kFp32 | kFp16 | kFp64};
  ADD_FAILURE() << "no expected precisions for " << gpu_name;
  return {0, 0};
}

std::string cuda_version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

// Checks one record against the fixture's GPU `gpu`, reported at `index`.
void expect_matches(const DeviceInfo& d, const json& fixture, const json& gpu, int index) {
  SCOPED_TRACE(gpu.at("name").get<std::string>() + " as cuda:" + std::to_string(index));
  const bool nvml = !fixture.value("nvml", json::object()).value("missing", false) &&
                    fixture.value("nvml", json::object()).value("init_error", 0) == 0;
  const bool integrated = gpu.value("integrated", false);
  const int cuda_version = fixture.value("cuda_version", 12040);
  EXPECT_TRUE(d.available) << d.unavailable_reason;
  EXPECT_EQ(d.unavailable_reason, "");
  EXPECT_EQ(d.kind, "cuda");
  EXPECT_EQ(d.index, index);
  EXPECT_EQ(d.device_class, integrated ? MLH_DEVICE_CLASS_UNIFIED_GPU : MLH_DEVICE_CLASS_DISCRETE_GPU);
  EXPECT_EQ(d.memory_unified, integrated);
  EXPECT_EQ(d.name, gpu.at("name").get<std::string>());
  EXPECT_EQ(d.vendor, "NVIDIA");
  EXPECT_EQ(d.torch_device, "cuda:" + std::to_string(index));
  EXPECT_EQ(d.uuid, gpu.at("uuid").get<std::string>());
  EXPECT_EQ(d.pci_bus_id, gpu.at("pci_bus_id").get<std::string>());
  EXPECT_EQ(d.capability_major, gpu.at("compute_capability").at(0).get<int>());
  EXPECT_EQ(d.capability_minor, gpu.at("compute_capability").at(1).get<int>());
  EXPECT_EQ(d.compute_units, gpu.at("multiprocessors").get<int>());
  EXPECT_EQ(d.logical_units, MLH_UNKNOWN);
  EXPECT_EQ(d.memory_total_bytes, gpu.at("memory_total_bytes").get<int64_t>());
  if (nvml && gpu.contains("memory_free_bytes"))
    EXPECT_EQ(d.memory_free_bytes, gpu.at("memory_free_bytes").get<int64_t>());
  else
    EXPECT_EQ(d.memory_free_bytes, MLH_UNKNOWN);
  EXPECT_EQ(d.runtime_version, cuda_version_text(cuda_version));
  if (nvml)
    EXPECT_EQ(d.driver_version, fixture.at("nvml").value("driver_version", "550.54.15"));
  else
    EXPECT_EQ(d.driver_version, "CUDA " + cuda_version_text(cuda_version));
  Precisions p = expected_precisions(d.name);
  EXPECT_EQ(d.precisions, p.all);
  EXPECT_EQ(d.fast_precisions, p.fast);
  EXPECT_EQ(d.limitations, 0u);
  EXPECT_EQ(d.score_hint, 0);
  EXPECT_EQ(d.recommended_threads, MLH_UNKNOWN);
  const std::string sm = "sm_" + std::to_string(d.capability_major) + std::to_string(d.capability_minor);
  EXPECT_EQ(d.features, d.capability_major >= 7 ? sm + ",tensor_cores" : sm);

  json details = json::parse(d.details_json);
  EXPECT_EQ(details["integrated"], integrated);
  EXPECT_EQ(details["cuda_driver_version"], cuda_version);
  EXPECT_EQ(details["driver_library"], MLH_FAKE_NVIDIA_PATH);
  char pci[32];
  std::snprintf(pci, sizeof pci, "%04x:%02x:%02x.0", details["pci_domain_id"].get<unsigned>(),
                details["pci_bus"].get<unsigned>(), details["pci_device"].get<unsigned>());
  EXPECT_EQ(pci, d.pci_bus_id);
  if (nvml) {
    EXPECT_EQ(details["nvml"], "ok");
    EXPECT_EQ(details["nvml_matched_by"], gpu.value("nvml_finds_by_uuid", true) ? "uuid" : "pci_bus_id");
  } else {
    EXPECT_NE(details["nvml"], "ok");
    EXPECT_TRUE(details["nvml_matched_by"].is_null());
  }
}

// The one record of an unusable machine.
void expect_unusable(const std::vector<DeviceInfo>& records, const std::string& reason) {
  ASSERT_EQ(records.size(), 1u);
  const DeviceInfo& d = records[0];
  EXPECT_FALSE(d.available);
  EXPECT_EQ(d.unavailable_reason, reason);
  EXPECT_EQ(d.kind, "cuda");
  EXPECT_EQ(d.index, 0);
  EXPECT_EQ(d.name, "NVIDIA GPU");
  EXPECT_EQ(d.vendor, "NVIDIA");
  EXPECT_EQ(d.torch_device, "cuda:0");
  EXPECT_EQ(d.device_class, MLH_DEVICE_CLASS_DISCRETE_GPU);
  EXPECT_EQ(d.memory_total_bytes, MLH_UNKNOWN);
  EXPECT_EQ(d.precisions, 0u);
  EXPECT_TRUE(json::parse(d.details_json).is_object());
}

std::vector<DeviceInfo> probe_under(const std::string& fixture, const std::optional<std::string>& visible = {}) {
  FakeMachine machine(fixture, visible);
  return PluginInstance().probe();
}

json a100() { return read_fixture("a100").at("gpus").at(0); }

TEST(CudaLibrary, NegotiatesAsTheCudaDevicePlugin) {
  const mlh_negotiate_response& r = negotiated();
  EXPECT_EQ(r.abi_major, 1u);
  EXPECT_EQ(r.kind, MLH_PLUGIN_KIND_DEVICE);
  EXPECT_STREQ(r.name, "cuda");
  EXPECT_STREQ(r.version, "0.1.0");
  EXPECT_NE(plugin_table().prepare, nullptr);
  EXPECT_NE(plugin_table().telemetry, nullptr);
}

// This machine has no NVIDIA driver: with no override at all, the plugin must still load
// and say so.
TEST(CudaLibrary, WithoutADriverOneUnavailableRecordNamesLibcuda) {
  if (void* real = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    ::dlclose(real);
    GTEST_SKIP() << "this machine has an NVIDIA driver";
  }
  ScopedEnv driver("MLH_CUDA_DRIVER_LIBRARY", std::nullopt), nvml("MLH_NVML_LIBRARY", std::nullopt),
      gpus("MLH_FAKE_GPUS", std::nullopt);
  std::vector<DeviceInfo> records = PluginInstance().probe();
  ASSERT_EQ(records.size(), 1u);
  const std::string& reason = records[0].unavailable_reason;
  EXPECT_EQ(reason.rfind("no NVIDIA driver: libcuda.so.1 could not be loaded (", 0), 0u) << reason;
  expect_unusable(records, reason);
}

TEST(CudaLibrary, MissingDriverLibraryIsNamedWithDlerror) {
  ScopedEnv driver("MLH_CUDA_DRIVER_LIBRARY", std::string("/nonexistent/libcuda.so.1"));
  std::vector<DeviceInfo> records = PluginInstance().probe();
  ASSERT_EQ(records.size(), 1u);
  const std::string& reason = records[0].unavailable_reason;
  // dlerror's own words, which name the file again.
  EXPECT_EQ(
      reason.rfind("no NVIDIA driver: /nonexistent/libcuda.so.1 could not be loaded (/nonexistent/libcuda.so.1", 0), 0u)
      << reason;
  expect_unusable(records, reason);
}

TEST(CudaLibrary, ALibraryWithoutTheDriverApiIsNoDriver) {
  ScopedEnv driver("MLH_CUDA_DRIVER_LIBRARY", std::string(MLH_CUDA_PLUGIN_PATH));
  expect_unusable(PluginInstance().probe(),
                  std::string("no NVIDIA driver: ") + MLH_CUDA_PLUGIN_PATH + " could not be loaded (no symbol cuInit)");
}

class CudaFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(CudaFixture, EveryRecordFieldMatchesTheFixture) {
  FakeMachine machine(GetParam());
  std::vector<DeviceInfo> records = PluginInstance().probe();
  const json& gpus = machine.fixture().at("gpus");
  ASSERT_EQ(records.size(), gpus.size());
  for (size_t i = 0; i < records.size(); ++i) {
    expect_matches(records[i], machine.fixture(), gpus[i], static_cast<int>(i));
    EXPECT_EQ(json::parse(records[i].details_json)["gpu_count"], gpus.size());
  }
}

INSTANTIATE_TEST_SUITE_P(Machines, CudaFixture,
                         ::testing::Values("a100", "rtx3060", "two_gpus", "v100", "jetson_orin", "nvml_missing",
                                           "nvml_fails"));

TEST(CudaLibrary, WithoutNvmlTheDetailsSayWhy) {
  const std::string missing = json::parse(probe_under("nvml_missing").at(0).details_json)["nvml"];
  EXPECT_EQ(missing.rfind("/nonexistent/libnvidia-ml.so.1 could not be loaded (/nonexistent/libnvidia-ml.so.1", 0), 0u)
      << missing;
  json details = json::parse(probe_under("nvml_fails").at(0).details_json);
  EXPECT_EQ(details["nvml"], "nvmlInit_v2 failed: Unknown Error (999)");
}

// --- CUDA_VISIBLE_DEVICES: the driver's numbering is what LibTorch will see ---

TEST(CudaVisibleDevices, AnIndexShowsThatGpuAsCuda0) {
  json fixture = read_fixture("two_gpus");
  std::vector<DeviceInfo> records = probe_under("two_gpus", "1");
  ASSERT_EQ(records.size(), 1u);
  expect_matches(records[0], fixture, fixture["gpus"][1], 0);
  EXPECT_EQ(json::parse(records[0].details_json)["cuda_visible_devices"], "1");
}

TEST(CudaVisibleDevices, AUuidOrAUniquePrefixShowsThatGpu) {
  json fixture = read_fixture("two_gpus");
  const std::string uuid = fixture["gpus"][1]["uuid"];
  for (const std::string& value : {uuid, uuid.substr(0, 8)}) {
    std::vector<DeviceInfo> records = probe_under("two_gpus", value);
    ASSERT_EQ(records.size(), 1u) << value;
    expect_matches(records[0], fixture, fixture["gpus"][1], 0);
  }
}

TEST(CudaVisibleDevices, TheListOrdersTheDevices) {
  json fixture = read_fixture("two_gpus");
  std::vector<DeviceInfo> records = probe_under("two_gpus", "1,0");
  ASSERT_EQ(records.size(), 2u);
  expect_matches(records[0], fixture, fixture["gpus"][1], 0);
  expect_matches(records[1], fixture, fixture["gpus"][0], 1);
}

TEST(CudaVisibleDevices, AnInvalidEntryEndsTheList) {
  json fixture = read_fixture("two_gpus");
  std::vector<DeviceInfo> records = probe_under("two_gpus", "0,bogus,1");
  ASSERT_EQ(records.size(), 1u);
  expect_matches(records[0], fixture, fixture["gpus"][0], 0);
}

TEST(CudaVisibleDevices, HidingEveryGpuIsTheReason) {
  expect_unusable(probe_under("two_gpus", ""), "CUDA_VISIBLE_DEVICES=\"\" hides every GPU");
  expect_unusable(probe_under("two_gpus", "2"), "CUDA_VISIBLE_DEVICES=\"2\" hides every GPU");
  expect_unusable(probe_under("two_gpus", "-1"), "CUDA_VISIBLE_DEVICES=\"-1\" hides every GPU");
  expect_unusable(probe_under("two_gpus", "GPU-"), "CUDA_VISIBLE_DEVICES=\"GPU-\" hides every GPU");  // ambiguous
}

// --- Unusable machines: one record, and the reason says what to do ---

TEST(CudaUnusable, DriverFailure) {
  expect_unusable(probe_under("driver_fails"), "cuInit failed: CUDA_ERROR_UNKNOWN (999)");
  json details = json::parse(probe_under("driver_fails").at(0).details_json);
  EXPECT_EQ(details["failed_call"], "cuInit");
  EXPECT_EQ(details["result"], 999);
  EXPECT_EQ(details["result_name"], "CUDA_ERROR_UNKNOWN");
}

TEST(CudaUnusable, DriverTooOld) {
  expect_unusable(probe_under("driver_too_old"), "NVIDIA driver too old: supports CUDA 10.2, need 11.0");
}

TEST(CudaUnusable, NoGpu) {
  expect_unusable(probe_under("no_gpus"), "no NVIDIA GPU found");
  // cuInit succeeding with zero devices reads the same.
  FakeMachine machine = FakeMachine::from_json({{"cuinit_error", 0}, {"gpus", json::array()}});
  expect_unusable(PluginInstance().probe(), "no NVIDIA GPU found");
}

TEST(CudaUnusable, PermissionDenied) {
  const std::string reason = "permission denied opening the NVIDIA device (are you in the video group?)";
  // cuInit finds nothing, NVML says why.
  expect_unusable(probe_under("permission_denied"), reason);
  // cuInit says it itself, with NVML working.
  FakeMachine machine = FakeMachine::from_json({{"cuinit_error", 800}, {"gpus", json::array({a100()})}});
  expect_unusable(PluginInstance().probe(), reason);
}

TEST(CudaUnusable, OtherDriverErrorsAreExplained) {
  {
    FakeMachine machine = FakeMachine::from_json({{"cuinit_error", 34}, {"gpus", json::array({a100()})}});
    expect_unusable(PluginInstance().probe(), std::string("no NVIDIA driver: ") + MLH_FAKE_NVIDIA_PATH +
                                                  " is the CUDA toolkit's stub library, not the driver's");
  }
  {
    FakeMachine machine = FakeMachine::from_json({{"cuinit_error", 803}, {"gpus", json::array({a100()})}});
    expect_unusable(PluginInstance().probe(), std::string("NVIDIA driver mismatch: ") + MLH_FAKE_NVIDIA_PATH +
                                                  " and the loaded kernel module are different versions (reboot "
                                                  "after a driver update?)");
  }
  {  // cuGetErrorName knows no name for it
    FakeMachine machine = FakeMachine::from_json({{"cuinit_error", 4242}, {"gpus", json::array({a100()})}});
    expect_unusable(PluginInstance().probe(), "cuInit failed: error (4242)");
  }
}

TEST(CudaUnusable, NoGpuWithVisibleDevicesSetBlamesTheVariable) {
  expect_unusable(probe_under("no_gpus", "0"), "CUDA_VISIBLE_DEVICES=\"0\" hides every GPU");
}

// The environment is read at each probe, not when the library loads.
TEST(CudaLibrary, EachProbeReadsTheEnvironmentAgain) {
  PluginInstance plugin;
  {
    FakeMachine machine("a100");
    EXPECT_EQ(plugin.probe().size(), 1u);
  }
  {
    FakeMachine machine("two_gpus");
    EXPECT_EQ(plugin.probe().size(), 2u);
  }
  {
    ScopedEnv driver("MLH_CUDA_DRIVER_LIBRARY", std::string("/nonexistent/libcuda.so.1"));
    std::vector<DeviceInfo> records = plugin.probe();
    ASSERT_EQ(records.size(), 1u);
    EXPECT_FALSE(records[0].available);
  }
}

// --- prepare ---

TEST(CudaPrepare, MakesTheChosenGpuTheOnlyVisibleOne) {
  FakeMachine machine("two_gpus");
  PluginInstance plugin;
  plugin.probe();
  std::vector<mlh::EnvVar> env;
  const std::string plan =
      R"({"memory": {"expandable_segments": true, "max_split_size_mb": 512, "garbage_collection_threshold": 0.8},
          "threads": {"intra_op": 6, "inter_op": 1}, "omp_proc_bind": "close", "omp_wait_policy": "passive"})";
  Outcome o = plugin.prepare(1, plan, &env);
  ASSERT_EQ(o.status, MLH_OK) << o.message;
  const std::string uuid = machine.fixture()["gpus"][1]["uuid"];
  std::vector<std::pair<std::string, std::string>> got;
  for (const auto& v : env) got.emplace_back(v.name, v.value);
  std::vector<std::pair<std::string, std::string>> expected = {
      {"CUDA_VISIBLE_DEVICES", uuid},
      {"MLH_TORCH_DEVICE", "cuda:0"},
      {"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True,max_split_size_mb:512,garbage_collection_threshold:0.8"}};
  // Only the GPU's own variables: the plan's threads and OpenMP settings are the CPU side of
  // the run, which the host sets for every device.
  EXPECT_EQ(got, expected);
}

// What prepare sets, applied, leaves exactly the chosen GPU as cuda:0, whatever the
// numbering was before.
TEST(CudaPrepare, TheWorkerSeesTheChosenGpuAsCuda0) {
  json fixture = read_fixture("two_gpus");
  for (const std::optional<std::string>& before : {std::optional<std::string>(), std::optional<std::string>("1,0")}) {
    std::map<std::string, std::string> env;
    std::string chosen_uuid;
    {
      FakeMachine machine("two_gpus", before);
      PluginInstance plugin;
      std::vector<DeviceInfo> records = plugin.probe();
      ASSERT_EQ(records.size(), 2u);
      chosen_uuid = records[1].uuid;
      std::vector<mlh::EnvVar> vars;
      ASSERT_EQ(plugin.prepare(1, "{}", &vars).status, MLH_OK);
      env = as_map(vars);
    }
    std::vector<DeviceInfo> worker = probe_under("two_gpus", env["CUDA_VISIBLE_DEVICES"]);
    ASSERT_EQ(worker.size(), 1u);
    EXPECT_EQ(worker[0].uuid, chosen_uuid);
    EXPECT_EQ(worker[0].torch_device, env["MLH_TORCH_DEVICE"]);
  }
}

TEST(CudaPrepare, WithoutMemoryOrThreadsOnlyTheDevice) {
  FakeMachine machine("a100");
  std::vector<mlh::EnvVar> env;
  // A fresh instance: the host may prepare without probing first.
  ASSERT_EQ(PluginInstance().prepare(0, R"({"memory": {}, "precision": "bf16"})", &env).status, MLH_OK);
  std::map<std::string, std::string> expected = {{"CUDA_VISIBLE_DEVICES", a100()["uuid"]},
                                                 {"MLH_TORCH_DEVICE", "cuda:0"}};
  EXPECT_EQ(as_map(env), expected);
}

TEST(CudaPrepare, RejectsBadPlansNamingTheField) {
  FakeMachine machine("a100");
  PluginInstance plugin;
  for (const auto& [plan, field] : std::vector<std::pair<std::string, std::string>>{
           {R"({"memory": {"expandable_segments": "yes"}})", "memory.expandable_segments"},
           {R"({"memory": {"max_split_size_mb": 20}})", "memory.max_split_size_mb"},
           {R"({"memory": {"garbage_collection_threshold": 1.0}})", "memory.garbage_collection_threshold"},
           {R"({"memory": 5})", "'memory'"},
           {R"([1, 2])", "plan: expected a JSON object"},
           {R"({"memory": )", "plan: not valid JSON"}}) {
    Outcome o = plugin.prepare(0, plan, nullptr);
    EXPECT_EQ(o.status, MLH_ERR_INVALID_ARGUMENT) << plan;
    EXPECT_NE(o.message.find(field), std::string::npos) << plan << " -> " << o.message;
  }
}

TEST(CudaPrepare, RejectsAnIndexThatDoesNotExist) {
  FakeMachine machine("two_gpus");
  PluginInstance plugin;
  for (int32_t index : {2, -1}) {
    Outcome o = plugin.prepare(index, "{}", nullptr);
    EXPECT_EQ(o.status, MLH_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(o.message,
              "device index " + std::to_string(index) + " does not exist: the cuda plugin reports cuda:0 to cuda:1");
  }
}

TEST(CudaPrepare, RefusesAnUnavailableDevice) {
  FakeMachine machine("driver_too_old");
  Outcome o = PluginInstance().prepare(0, "{}", nullptr);
  EXPECT_EQ(o.status, MLH_ERR_UNAVAILABLE);
  EXPECT_EQ(o.message, "cuda:0 is unavailable: NVIDIA driver too old: supports CUDA 10.2, need 11.0");
}

// --- telemetry ---

TEST(CudaTelemetry, ReportsNvmlFigures) {
  FakeMachine machine("a100");
  const json& gpu = machine.fixture()["gpus"][0];
  mlh_telemetry_sample s;
  // A fresh instance: the host's sampler does not probe first.
  Outcome o = PluginInstance().telemetry(0, &s);
  ASSERT_EQ(o.status, MLH_OK) << o.message;
  EXPECT_EQ(s.valid_fields, MLH_TELEMETRY_UTILIZATION | MLH_TELEMETRY_MEMORY_USED | MLH_TELEMETRY_MEMORY_TOTAL |
                                MLH_TELEMETRY_TEMPERATURE | MLH_TELEMETRY_POWER);
  EXPECT_EQ(s.utilization_percent, 37.0);
  EXPECT_EQ(s.memory_total_bytes, gpu["memory_total_bytes"].get<int64_t>());
  EXPECT_EQ(s.memory_used_bytes, gpu["memory_total_bytes"].get<int64_t>() - gpu["memory_free_bytes"].get<int64_t>());
  EXPECT_EQ(s.temperature_celsius, 54.0);
  EXPECT_DOUBLE_EQ(s.power_watts, 86.123);
}

TEST(CudaTelemetry, UnknownFiguresAreLeftOut) {
  FakeMachine machine("rtx3060");  // no power reading
  mlh_telemetry_sample s;
  ASSERT_EQ(PluginInstance().telemetry(0, &s).status, MLH_OK);
  EXPECT_EQ(s.valid_fields, MLH_TELEMETRY_UTILIZATION | MLH_TELEMETRY_MEMORY_USED | MLH_TELEMETRY_MEMORY_TOTAL |
                                MLH_TELEMETRY_TEMPERATURE);
  EXPECT_EQ(s.temperature_celsius, 41.0);
}

TEST(CudaTelemetry, FindsAGpuByPciBusIdWhenNvmlMissesItsUuid) {
  FakeMachine machine("two_gpus");
  mlh_telemetry_sample s;
  ASSERT_EQ(PluginInstance().telemetry(1, &s).status, MLH_OK);
  EXPECT_EQ(s.utilization_percent, 5.0);
  EXPECT_EQ(s.memory_total_bytes, machine.fixture()["gpus"][1]["memory_total_bytes"].get<int64_t>());
}

TEST(CudaTelemetry, UnsupportedWithoutNvml) {
  for (const char* fixture : {"nvml_missing", "nvml_fails"}) {
    FakeMachine machine(fixture);
    mlh_telemetry_sample s;
    Outcome o = PluginInstance().telemetry(0, &s);
    EXPECT_EQ(o.status, MLH_ERR_UNSUPPORTED) << fixture;
    EXPECT_EQ(o.message.rfind("no GPU telemetry without NVML: ", 0), 0u) << o.message;
    EXPECT_EQ(s.valid_fields, 0u);
  }
}

TEST(CudaTelemetry, RejectsAnIndexThatDoesNotExist) {
  FakeMachine machine("a100");
  mlh_telemetry_sample s;
  Outcome o = PluginInstance().telemetry(1, &s);
  EXPECT_EQ(o.status, MLH_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(o.message, "device index 1 does not exist: the cuda plugin reports only cuda:0");
}

// The host probes every plugin at startup: the plugin's own share of a probe (loading the
// libraries, the calls, the records) must cost a few milliseconds. A real driver adds
// its own cuInit time, which no plugin can avoid.
TEST(CudaLibrary, ProbeIsCheap) {
  FakeMachine machine("two_gpus");
  constexpr int kRounds = 100;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRounds; ++i) EXPECT_EQ(PluginInstance().probe().size(), 2u);
  double per_call_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / kRounds;
  std::cout << "create+probe+destroy: " << per_call_ms << " ms per call\n";
  RecordProperty("probe_ms", std::to_string(per_call_ms));
  EXPECT_LT(per_call_ms, 20.0);
}

}  // namespace
