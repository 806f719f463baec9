// The C++ plugin helper (mlh/plugin.hpp): version negotiation, error values, record
// conversion and the generated function tables, called the way a host calls them.
#define MLH_PLUGIN_NAME "helper-test"
#define MLH_PLUGIN_VERSION "1.2.3"

#include <mlh/plugin.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

const mlh_device_plugin kDummyTable = {sizeof(mlh_device_plugin), nullptr, nullptr, nullptr, nullptr,
                                       nullptr};

mlh_error make_error() {
  mlh_error e{};
  e.struct_size = sizeof(e);
  e.code = MLH_OK;
  return e;
}

struct Negotiated {
  mlh_status status = -1;
  mlh_negotiate_response response{};
  mlh_error error = make_error();
};

Negotiated negotiate_with(const std::vector<std::pair<uint32_t, uint32_t>>& offers) {
  std::vector<mlh_abi_version> versions;
  for (const auto& o : offers) versions.push_back({sizeof(mlh_abi_version), o.first, o.second});
  mlh_negotiate_request request{};
  request.struct_size = sizeof(request);
  request.versions = versions.empty() ? nullptr : versions.data();
  request.version_count = static_cast<uint32_t>(versions.size());
  request.expected_kind = MLH_PLUGIN_KIND_DEVICE;
  request.host_name = "mlhost";
  request.host_version = "0.1.0";
  Negotiated n;
  n.response.struct_size = sizeof(n.response);
  n.status = mlh::detail::negotiate(&request, &n.response, &n.error, MLH_PLUGIN_KIND_DEVICE, "neg",
                                    "9.9.9", &kDummyTable);
  return n;
}

uint32_t expected_minor(uint32_t offered) { return std::min<uint32_t>(offered, MLH_ABI_VERSION_MINOR); }

// ---------------------------------------------------------------- negotiate

TEST(HelperNegotiate, AcceptsOneDotZero) {
  auto n = negotiate_with({{1, 0}});
  ASSERT_EQ(n.status, MLH_OK) << n.error.message;
  EXPECT_EQ(n.response.abi_major, 1u);
  EXPECT_EQ(n.response.abi_minor, 0u);
  EXPECT_EQ(n.response.kind, MLH_PLUGIN_KIND_DEVICE);
  EXPECT_STREQ(n.response.name, "neg");
  EXPECT_STREQ(n.response.version, "9.9.9");
  EXPECT_EQ(n.response.table, &kDummyTable);
  EXPECT_EQ(n.response.struct_size, sizeof(n.response)) << "struct_size belongs to the host";
}

TEST(HelperNegotiate, NewerHostMinorGetsThePluginsMinor) {
  auto n = negotiate_with({{1, 5}});
  ASSERT_EQ(n.status, MLH_OK) << n.error.message;
  EXPECT_EQ(n.response.abi_major, 1u);
  EXPECT_EQ(n.response.abi_minor, expected_minor(5));
  EXPECT_EQ(n.response.abi_minor, static_cast<uint32_t>(MLH_ABI_VERSION_MINOR));
}

TEST(HelperNegotiate, SkipsAnUnknownMajorAndTakesTheNextOffer) {
  auto n = negotiate_with({{2, 0}, {1, 3}});
  ASSERT_EQ(n.status, MLH_OK) << n.error.message;
  EXPECT_EQ(n.response.abi_major, 1u);
  EXPECT_EQ(n.response.abi_minor, expected_minor(3));
}

void expect_version_refusal(const Negotiated& n) {
  EXPECT_EQ(n.status, MLH_ERR_VERSION);
  EXPECT_EQ(n.error.code, MLH_ERR_VERSION);
  EXPECT_GT(std::strlen(n.error.message), 0u);
  EXPECT_NE(std::string(n.error.message).find("ABI"), std::string::npos) << n.error.message;
  EXPECT_EQ(n.response.table, nullptr) << "a refusal does not fill the response";
  EXPECT_EQ(n.response.name, nullptr);
}

TEST(HelperNegotiate, RefusesOnlyAFutureMajor) { expect_version_refusal(negotiate_with({{2, 0}})); }
TEST(HelperNegotiate, RefusesAnOlderMajor) { expect_version_refusal(negotiate_with({{0, 9}})); }
TEST(HelperNegotiate, RefusesAnEmptyOffer) { expect_version_refusal(negotiate_with({})); }

TEST(HelperNegotiate, RefusesACountWithoutVersions) {
  mlh_negotiate_request request{};
  request.struct_size = sizeof(request);
  request.versions = nullptr;
  request.version_count = 3;
  Negotiated n;
  n.response.struct_size = sizeof(n.response);
  n.status = mlh::detail::negotiate(&request, &n.response, &n.error, MLH_PLUGIN_KIND_DEVICE, "neg", "1",
                                    &kDummyTable);
  expect_version_refusal(n);
}

TEST(HelperNegotiate, RefusesATooSmallResponseWithoutWritingPastIt) {
  // An (impossible) host whose response ends before `table`: the helper must not write any
  // field, least of all one beyond struct_size.
  for (size_t cut : {size_t{4}, offsetof(mlh_negotiate_response, table),
                     offsetof(mlh_negotiate_response, table) + sizeof(void*) - 1}) {
    SCOPED_TRACE(cut);
    alignas(mlh_negotiate_response) unsigned char buffer[sizeof(mlh_negotiate_response) + 32];
    std::memset(buffer, 0xAB, sizeof(buffer));
    auto* response = reinterpret_cast<mlh_negotiate_response*>(buffer);
    response->struct_size = static_cast<uint32_t>(cut);
    mlh_abi_version v{sizeof(mlh_abi_version), 1, 0};
    mlh_negotiate_request request{};
    request.struct_size = sizeof(request);
    request.versions = &v;
    request.version_count = 1;
    mlh_error error = make_error();
    EXPECT_EQ(mlh::detail::negotiate(&request, response, &error, MLH_PLUGIN_KIND_DEVICE, "n", "1",
                                     &kDummyTable),
              MLH_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(error.code, MLH_ERR_INVALID_ARGUMENT);
    EXPECT_GT(std::strlen(error.message), 0u);
    for (size_t i = sizeof(uint32_t); i < sizeof(buffer); ++i) ASSERT_EQ(buffer[i], 0xAB) << "byte " << i;
  }
}

TEST(HelperNegotiate, LargerResponseFromANewerHostKeepsItsTail) {
  alignas(mlh_negotiate_response) unsigned char buffer[sizeof(mlh_negotiate_response) + 32];
  std::memset(buffer, 0xCD, sizeof(buffer));
  auto* response = reinterpret_cast<mlh_negotiate_response*>(buffer);
  response->struct_size = sizeof(buffer);
  mlh_abi_version v{sizeof(mlh_abi_version), 1, 7};
  mlh_negotiate_request request{};
  request.struct_size = sizeof(request);
  request.versions = &v;
  request.version_count = 1;
  mlh_error error = make_error();
  ASSERT_EQ(mlh::detail::negotiate(&request, response, &error, MLH_PLUGIN_KIND_DEVICE, "n", "1", &kDummyTable),
            MLH_OK);
  EXPECT_EQ(response->abi_minor, expected_minor(7));
  for (size_t i = sizeof(mlh_negotiate_response); i < sizeof(buffer); ++i) ASSERT_EQ(buffer[i], 0xCD);
}

TEST(HelperNegotiate, NullArgumentsAreErrorsNotCrashes) {
  mlh_error error = make_error();
  mlh_negotiate_response response{};
  response.struct_size = sizeof(response);
  EXPECT_EQ(mlh::detail::negotiate(nullptr, &response, &error, 1, "n", "1", nullptr), MLH_ERR_INVALID_ARGUMENT);
  mlh_negotiate_request request{};
  request.struct_size = sizeof(request);
  EXPECT_EQ(mlh::detail::negotiate(&request, nullptr, &error, 1, "n", "1", nullptr), MLH_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlh::detail::negotiate(&request, &response, nullptr, 1, "n", "1", nullptr), MLH_ERR_VERSION);
}

// ---------------------------------------------------------------- guard and set_error

TEST(HelperGuard, SuccessLeavesTheErrorAlone) {
  mlh_error e = make_error();
  std::strcpy(e.message, "untouched");
  EXPECT_EQ(mlh::detail::guard(&e, [] {}), MLH_OK);
  EXPECT_EQ(e.code, MLH_OK);
  EXPECT_STREQ(e.message, "untouched");
}

TEST(HelperGuard, MlhErrorKeepsItsCodeAndMessage) {
  mlh_error e = make_error();
  EXPECT_EQ(mlh::detail::guard(&e, [] { throw mlh::Error(MLH_ERR_UNAVAILABLE, "no driver"); }),
            MLH_ERR_UNAVAILABLE);
  EXPECT_EQ(e.code, MLH_ERR_UNAVAILABLE);
  EXPECT_STREQ(e.message, "no driver");
}

TEST(HelperGuard, BadAllocIsOutOfMemory) {
  mlh_error e = make_error();
  EXPECT_EQ(mlh::detail::guard(&e, [] { throw std::bad_alloc(); }), MLH_ERR_OUT_OF_MEMORY);
  EXPECT_EQ(e.code, MLH_ERR_OUT_OF_MEMORY);
  EXPECT_STREQ(e.message, "out of memory");
}

TEST(HelperGuard, StdExceptionIsInternalWithItsMessage) {
  mlh_error e = make_error();
  EXPECT_EQ(mlh::detail::guard(&e, [] { throw std::runtime_error("probe exploded"); }), MLH_ERR_INTERNAL);
  EXPECT_EQ(e.code, MLH_ERR_INTERNAL);
  EXPECT_STREQ(e.message, "uncaught exception: probe exploded");
}

TEST(HelperGuard, ThrownIntIsInternalOfUnknownType) {
  mlh_error e = make_error();
  EXPECT_EQ(mlh::detail::guard(&e, [] { throw 42; }), MLH_ERR_INTERNAL);
  EXPECT_EQ(e.code, MLH_ERR_INTERNAL);
  EXPECT_STREQ(e.message, "uncaught exception of unknown type");
}

TEST(HelperGuard, NullOrTooSmallErrorStillReturnsTheCode) {
  EXPECT_EQ(mlh::detail::guard(nullptr, [] { throw mlh::Error(MLH_ERR_IO, "x"); }), MLH_ERR_IO);
  mlh_error e = make_error();
  e.struct_size = offsetof(mlh_error, message) + 10;  // message does not fit completely
  std::memset(e.message, 'z', sizeof(e.message));
  EXPECT_EQ(mlh::detail::guard(&e, [] { throw std::runtime_error("y"); }), MLH_ERR_INTERNAL);
  EXPECT_EQ(e.code, MLH_OK) << "nothing written into an error struct that is too small";
  EXPECT_EQ(e.message[0], 'z');
}

TEST(HelperSetError, TruncatesAndTerminatesALongMessage) {
  mlh_error e = make_error();
  std::memset(e.message, 'q', sizeof(e.message));
  std::string long_message(5000, 'x');
  mlh::detail::set_error(&e, MLH_ERR_IO, long_message.c_str());
  EXPECT_EQ(e.code, MLH_ERR_IO);
  EXPECT_EQ(e.message[MLH_ERROR_MESSAGE_CAPACITY - 1], '\0');
  EXPECT_EQ(std::strlen(e.message), size_t{MLH_ERROR_MESSAGE_CAPACITY - 1});
  EXPECT_EQ(std::string(e.message), long_message.substr(0, MLH_ERROR_MESSAGE_CAPACITY - 1));
}

TEST(HelperSetError, MessageOfExactlyCapacityMinusOneIsKept) {
  mlh_error e = make_error();
  std::string m(MLH_ERROR_MESSAGE_CAPACITY - 1, 'y');
  mlh::detail::set_error(&e, MLH_ERR_UNKNOWN, m.c_str());
  EXPECT_EQ(std::string(e.message), m);
}

TEST(HelperSetError, NullMessageIsEmpty) {
  mlh_error e = make_error();
  std::strcpy(e.message, "old");
  mlh::detail::set_error(&e, MLH_ERR_UNKNOWN, nullptr);
  EXPECT_EQ(e.code, MLH_ERR_UNKNOWN);
  EXPECT_STREQ(e.message, "");
}

TEST(HelperSetError, NullErrorIsIgnored) { mlh::detail::set_error(nullptr, MLH_ERR_UNKNOWN, "x"); }

// ---------------------------------------------------------------- to_record

TEST(HelperToRecord, EmptyOptionalStringsBecomeNull) {
  mlh::DeviceInfo d;
  d.kind = "cpu";
  d.name = "Some CPU";
  d.torch_device = "cpu";
  mlh_device_record r = mlh::detail::to_record(d);
  EXPECT_EQ(r.struct_size, sizeof(mlh_device_record));
  EXPECT_STREQ(r.kind, "cpu");
  EXPECT_STREQ(r.name, "Some CPU");
  EXPECT_STREQ(r.torch_device, "cpu");
  EXPECT_EQ(r.vendor, nullptr);
  EXPECT_EQ(r.unavailable_reason, nullptr);
  EXPECT_EQ(r.uuid, nullptr);
  EXPECT_EQ(r.pci_bus_id, nullptr);
  EXPECT_EQ(r.driver_version, nullptr);
  EXPECT_EQ(r.runtime_version, nullptr);
  EXPECT_EQ(r.features, nullptr);
  EXPECT_EQ(r.details_json, nullptr);
  // Defaults mean "unknown".
  EXPECT_EQ(r.memory_total_bytes, MLH_UNKNOWN);
  EXPECT_EQ(r.memory_free_bytes, MLH_UNKNOWN);
  EXPECT_EQ(r.compute_units, MLH_UNKNOWN);
  EXPECT_EQ(r.logical_units, MLH_UNKNOWN);
  EXPECT_EQ(r.capability_major, MLH_UNKNOWN);
  EXPECT_EQ(r.recommended_threads, MLH_UNKNOWN);
  EXPECT_EQ(r.precisions, MLH_PRECISION_FP32);
  EXPECT_EQ(r.available, 1);
}

TEST(HelperToRecord, RequiredStringsStayNonNullEvenWhenEmpty) {
  mlh::DeviceInfo d;  // kind, name, torch_device empty: the host rejects it, but never sees NULL
  mlh_device_record r = mlh::detail::to_record(d);
  ASSERT_NE(r.kind, nullptr);
  ASSERT_NE(r.name, nullptr);
  ASSERT_NE(r.torch_device, nullptr);
  EXPECT_STREQ(r.name, "");
}

TEST(HelperToRecord, CopiesEveryField) {
  mlh::DeviceInfo d;
  d.device_class = MLH_DEVICE_CLASS_DISCRETE_GPU;
  d.index = 3;
  d.available = false;
  d.kind = "cuda";
  d.name = "GPU";
  d.vendor = "NVIDIA";
  d.torch_device = "cuda:3";
  d.unavailable_reason = "broken";
  d.uuid = "GPU-1";
  d.pci_bus_id = "0000:3b:00.0";
  d.driver_version = "550.1";
  d.runtime_version = "12.4";
  d.memory_total_bytes = 80;
  d.memory_free_bytes = 70;
  d.memory_unified = true;
  d.compute_units = 132;
  d.logical_units = 7;
  d.capability_major = 9;
  d.capability_minor = 0;
  d.precisions = MLH_PRECISION_FP32 | MLH_PRECISION_BF16;
  d.fast_precisions = MLH_PRECISION_BF16;
  d.limitations = MLH_LIMIT_NO_GRAPH_COMPILE;
  d.recommended_threads = 4;
  d.score_hint = -2;
  d.features = "a,b";
  d.details_json = "{}";
  mlh_device_record r = mlh::detail::to_record(d);
  EXPECT_EQ(r.device_class, MLH_DEVICE_CLASS_DISCRETE_GPU);
  EXPECT_EQ(r.index, 3);
  EXPECT_EQ(r.available, 0);
  EXPECT_EQ(r.vendor, d.vendor.c_str()) << "the record borrows the DeviceInfo's strings";
  EXPECT_STREQ(r.torch_device, "cuda:3");
  EXPECT_STREQ(r.unavailable_reason, "broken");
  EXPECT_STREQ(r.uuid, "GPU-1");
  EXPECT_STREQ(r.pci_bus_id, "0000:3b:00.0");
  EXPECT_STREQ(r.driver_version, "550.1");
  EXPECT_STREQ(r.runtime_version, "12.4");
  EXPECT_EQ(r.memory_total_bytes, 80);
  EXPECT_EQ(r.memory_free_bytes, 70);
  EXPECT_EQ(r.memory_unified, 1);
  EXPECT_EQ(r.compute_units, 132);
  EXPECT_EQ(r.logical_units, 7);
  EXPECT_EQ(r.capability_major, 9);
  EXPECT_EQ(r.capability_minor, 0);
  EXPECT_EQ(r.precisions, MLH_PRECISION_FP32 | MLH_PRECISION_BF16);
  EXPECT_EQ(r.fast_precisions, MLH_PRECISION_BF16);
  EXPECT_EQ(r.limitations, MLH_LIMIT_NO_GRAPH_COMPILE);
  EXPECT_EQ(r.recommended_threads, 4);
  EXPECT_EQ(r.score_hint, -2);
  EXPECT_STREQ(r.features, "a,b");
  EXPECT_STREQ(r.details_json, "{}");
}

// ---------------------------------------------------------------- the generated device plugin

int g_probe_mode = 0;  // 0: two devices, 1: throw mlh::Error

class TestDevices : public mlh::DevicePlugin {
 public:
  std::vector<mlh::DeviceInfo> probe() override {
    if (g_probe_mode == 1) throw mlh::Error(MLH_ERR_UNAVAILABLE, "no such hardware");
    mlh::DeviceInfo a, b;
    a.kind = b.kind = "test";
    a.torch_device = b.torch_device = "cpu";
    a.name = "first";
    b.name = "second";
    b.index = 1;
    return {a, b};
  }
  std::vector<mlh::EnvVar> prepare(int32_t device_index, const std::string& plan_json) override {
    return {{"TEST_INDEX", std::to_string(device_index)}, {"TEST_PLAN", plan_json}};
  }
  mlh::TelemetrySample telemetry(int32_t, int64_t) override {
    mlh::TelemetrySample t;
    t.utilization_percent = 50.0;
    t.memory_used_bytes = 1000;
    t.temperature_celsius = 60.0;
    t.power_watts = 100.0;
    return t;
  }
};

class NoTelemetryDevices : public mlh::DevicePlugin {
 public:
  std::vector<mlh::DeviceInfo> probe() override { return {}; }
};

}  // namespace

MLH_DEVICE_PLUGIN(TestDevices)

namespace {

static_assert(std::is_same<decltype(&mlh_plugin_negotiate), mlh_negotiate_fn>::value,
              "MLH_DEVICE_PLUGIN exports an entry point of type mlh_negotiate_fn");

const mlh_device_plugin* negotiated_table() {
  mlh_abi_version v{sizeof(mlh_abi_version), 1, 0};
  mlh_negotiate_request request{};
  request.struct_size = sizeof(request);
  request.versions = &v;
  request.version_count = 1;
  request.expected_kind = MLH_PLUGIN_KIND_DEVICE;
  mlh_negotiate_response response{};
  response.struct_size = sizeof(response);
  mlh_error error = make_error();
  if (mlh_plugin_negotiate(&request, &response, &error) != MLH_OK) return nullptr;
  if (response.kind != MLH_PLUGIN_KIND_DEVICE || std::string(response.name) != MLH_PLUGIN_NAME ||
      std::string(response.version) != MLH_PLUGIN_VERSION)
    return nullptr;
  return static_cast<const mlh_device_plugin*>(response.table);
}

TEST(HelperDeviceTable, EntryPointAnswersWithNameVersionAndTable) {
  const mlh_device_plugin* t = negotiated_table();
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->struct_size, sizeof(mlh_device_plugin));
  EXPECT_NE(t->create, nullptr);
  EXPECT_NE(t->destroy, nullptr);
  EXPECT_NE(t->probe, nullptr);
  EXPECT_NE(t->prepare, nullptr);
  EXPECT_NE(t->telemetry, nullptr);
}

TEST(HelperDeviceTable, CreateProbePrepareTelemetryDestroy) {
  const mlh_device_plugin* t = negotiated_table();
  ASSERT_NE(t, nullptr);
  mlh_error e = make_error();
  mlh_plugin_instance* inst = nullptr;
  ASSERT_EQ(t->create(&inst, &e), MLH_OK);
  ASSERT_NE(inst, nullptr);

  g_probe_mode = 0;
  const mlh_device_record* records = nullptr;
  uint32_t count = 0;
  ASSERT_EQ(t->probe(inst, &records, &count, &e), MLH_OK) << e.message;
  ASSERT_EQ(count, 2u);
  EXPECT_STREQ(records[0].name, "first");
  EXPECT_STREQ(records[1].name, "second");
  EXPECT_EQ(records[1].index, 1);

  g_probe_mode = 1;
  EXPECT_EQ(t->probe(inst, &records, &count, &e), MLH_ERR_UNAVAILABLE);
  EXPECT_STREQ(e.message, "no such hardware");
  g_probe_mode = 0;

  mlh_prepare_request pr{};
  pr.struct_size = sizeof(pr);
  pr.device_index = 1;
  pr.plan_json = "{\"threads\":2}";
  const mlh_env_var* vars = nullptr;
  ASSERT_EQ(t->prepare(inst, &pr, &vars, &count, &e), MLH_OK) << e.message;
  ASSERT_EQ(count, 2u);
  EXPECT_STREQ(vars[0].name, "TEST_INDEX");
  EXPECT_STREQ(vars[0].value, "1");
  EXPECT_EQ(vars[1].struct_size, sizeof(mlh_env_var));
  EXPECT_STREQ(vars[1].value, "{\"threads\":2}");
  EXPECT_EQ(t->prepare(inst, nullptr, &vars, &count, &e), MLH_ERR_INVALID_ARGUMENT);

  mlh_telemetry_sample s{};
  s.struct_size = sizeof(s);
  ASSERT_EQ(t->telemetry(inst, 0, 1, &s, &e), MLH_OK) << e.message;
  EXPECT_EQ(s.valid_fields,
            MLH_TELEMETRY_UTILIZATION | MLH_TELEMETRY_MEMORY_USED | MLH_TELEMETRY_TEMPERATURE | MLH_TELEMETRY_POWER);
  EXPECT_EQ(s.utilization_percent, 50.0);
  EXPECT_EQ(s.memory_used_bytes, 1000);
  EXPECT_EQ(s.power_watts, 100.0);

  t->destroy(inst);
}

TEST(HelperDeviceTable, TelemetryWritesOnlyWithinAnOlderHostsSample) {
  const mlh_device_plugin* t = negotiated_table();
  ASSERT_NE(t, nullptr);
  mlh_error e = make_error();
  mlh_plugin_instance* inst = nullptr;
  ASSERT_EQ(t->create(&inst, &e), MLH_OK);
  alignas(mlh_telemetry_sample) unsigned char buffer[sizeof(mlh_telemetry_sample)];
  std::memset(buffer, 0xEE, sizeof(buffer));
  auto* s = reinterpret_cast<mlh_telemetry_sample*>(buffer);
  const size_t cut = offsetof(mlh_telemetry_sample, temperature_celsius);
  s->struct_size = static_cast<uint32_t>(cut);
  ASSERT_EQ(t->telemetry(inst, 0, 1, s, &e), MLH_OK) << e.message;
  EXPECT_EQ(s->valid_fields, MLH_TELEMETRY_UTILIZATION | MLH_TELEMETRY_MEMORY_USED);
  for (size_t i = cut; i < sizeof(buffer); ++i) ASSERT_EQ(buffer[i], 0xEE) << "byte " << i;
  s->struct_size = 4;  // not even valid_fields fits
  EXPECT_EQ(t->telemetry(inst, 0, 1, s, &e), MLH_ERR_INVALID_ARGUMENT);
  t->destroy(inst);
}

TEST(HelperDeviceTable, DefaultTelemetryIsUnsupported) {
  const mlh_device_plugin* t = mlh::detail::DeviceTable<NoTelemetryDevices>::table();
  mlh_error e = make_error();
  mlh_plugin_instance* inst = nullptr;
  ASSERT_EQ(t->create(&inst, &e), MLH_OK);
  mlh_telemetry_sample s{};
  s.struct_size = sizeof(s);
  EXPECT_EQ(t->telemetry(inst, 0, 1, &s, &e), MLH_ERR_UNSUPPORTED);
  EXPECT_EQ(e.code, MLH_ERR_UNSUPPORTED);
  const mlh_device_record* records = nullptr;
  uint32_t count = 99;
  EXPECT_EQ(t->probe(inst, &records, &count, &e), MLH_OK);
  EXPECT_EQ(count, 0u) << "zero devices is a success";
  t->destroy(inst);
}

// ---------------------------------------------------------------- the algorithm table

class TestAlgorithm : public mlh::AlgorithmPlugin {
 public:
  mlh::AlgorithmDescription describe() override {
    mlh::AlgorithmDescription d;
    d.summary = "test algorithm";
    d.commands = {"train", "eval"};
    return d;
  }
  void run(mlh::RunContext& ctx) override {
    ctx.info("running " + ctx.command());
    if (ctx.should_stop()) throw mlh::Error(MLH_ERR_CANCELLED, "stopped");
  }
};

struct HostLog {
  std::vector<std::string> lines;
  int32_t stop = 0;
};

TEST(HelperAlgorithmTable, DescribeAndRun) {
  using Table = mlh::detail::AlgorithmTable<TestAlgorithm>;
  mlh_error e = make_error();
  mlh_plugin_instance* inst = nullptr;
  ASSERT_EQ(Table::create(&inst, &e), MLH_OK);
  const mlh_algorithm_description* d = nullptr;
  ASSERT_EQ(Table::describe(inst, &d, &e, "algo", "0.0.1"), MLH_OK) << e.message;
  EXPECT_EQ(d->struct_size, sizeof(mlh_algorithm_description));
  EXPECT_STREQ(d->name, "algo");
  EXPECT_STREQ(d->version, "0.0.1");
  ASSERT_EQ(d->command_count, 2u);
  EXPECT_STREQ(d->commands[0], "train");
  EXPECT_STREQ(d->config_defaults_json, "{}");

  HostLog log;
  mlh_host_callbacks host{};
  host.struct_size = sizeof(host);
  host.host_data = &log;
  host.log = [](void* h, int32_t, const char* m) { static_cast<HostLog*>(h)->lines.push_back(m); };
  host.metric = [](void*, const char*, double, int64_t) {};
  host.progress = [](void*, int64_t, int64_t, const char*) {};
  host.should_stop = [](void* h) { return static_cast<HostLog*>(h)->stop; };
  host.summary = [](void*, const char*) {};
  mlh_run_context ctx{};
  ctx.struct_size = sizeof(ctx);
  ctx.command = "train";
  ctx.host = &host;
  ASSERT_EQ(Table::run(inst, &ctx, &e), MLH_OK) << e.message;
  ASSERT_EQ(log.lines.size(), 1u);
  EXPECT_EQ(log.lines[0], "running train");
  log.stop = 1;
  EXPECT_EQ(Table::run(inst, &ctx, &e), MLH_ERR_CANCELLED);

  ctx.host = nullptr;
  EXPECT_EQ(Table::run(inst, &ctx, &e), MLH_ERR_INVALID_ARGUMENT);
  ctx.host = &host;
  ctx.struct_size = offsetof(mlh_run_context, host);  // an older, smaller context
  EXPECT_EQ(Table::run(inst, &ctx, &e), MLH_ERR_INVALID_ARGUMENT);
  Table::destroy(inst);
}

}  // namespace
