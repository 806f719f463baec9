// mlhost plugin C++ helper: write one class and one macro, get a correct C ABI plugin.
//
//   class MyDevices : public mlh::DevicePlugin {
//     std::vector<mlh::DeviceInfo> probe() override { ... }
//   };
//   MLH_DEVICE_PLUGIN(MyDevices)
//
//   class MyAlgorithm : public mlh::AlgorithmPlugin {
//     mlh::AlgorithmDescription describe() override { ... }
//     void run(mlh::RunContext& ctx) override { ... }
//   };
//   MLH_ALGORITHM_PLUGIN(MyAlgorithm)
//
// The plugin's name and version come from MLH_PLUGIN_NAME and MLH_PLUGIN_VERSION, which the
// SDK's CMake function mlh_add_plugin() defines from the same values it writes into the
// manifest, so library and manifest cannot disagree. Every exception thrown by the class is
// caught at the boundary and turned into an error value: throw mlh::Error for a chosen code.
#ifndef MLH_PLUGIN_HPP
#define MLH_PLUGIN_HPP

#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "mlh.h"

namespace mlh {

// An error with an ABI status code. Thrown inside a plugin, returned as a value at the ABI.
class Error : public std::runtime_error {
 public:
  Error(mlh_status code, const std::string& message) : std::runtime_error(message), code_(code) {}
  mlh_status code() const { return code_; }

 private:
  mlh_status code_;
};

// A data file the run reads that is missing, unreadable, truncated or malformed (an image,
// an IDX or .npy file, a level file, a corpus, a dataset's JSON): the user's input, as a bad
// config value is, so it has the same status, MLH_ERR_INVALID_ARGUMENT. Thrown before the run
// reports its first metric, the host exits 2 and removes the run folder it made (or, for a
// command on a trained run, the command's folder). The message names the file and what is
// wrong with it.
class DataError : public Error {
 public:
  explicit DataError(const std::string& message) : Error(MLH_ERR_INVALID_ARGUMENT, message) {}
};

// C++ view of mlh_device_record. Defaults mean "unknown".
struct DeviceInfo {
  int32_t device_class = MLH_DEVICE_CLASS_OTHER;
  int32_t index = 0;
  bool available = true;
  std::string kind, name, vendor, torch_device;
  std::string unavailable_reason, uuid, pci_bus_id, driver_version, runtime_version;
  int64_t memory_total_bytes = MLH_UNKNOWN;
  int64_t memory_free_bytes = MLH_UNKNOWN;
  bool memory_unified = false;
  int32_t compute_units = MLH_UNKNOWN;
  int32_t logical_units = MLH_UNKNOWN;
  int32_t capability_major = MLH_UNKNOWN;
  int32_t capability_minor = MLH_UNKNOWN;
  uint32_t precisions = MLH_PRECISION_FP32;
  uint32_t fast_precisions = 0;
  uint32_t limitations = 0;
  int32_t recommended_threads = MLH_UNKNOWN;
  int32_t score_hint = 0;
  std::string features;      // comma-separated
  std::string details_json;  // a JSON object, or empty
};

struct EnvVar {
  std::string name, value;
};

// A telemetry sample; an empty optional is "unknown".
struct TelemetrySample {
  std::optional<double> utilization_percent;
  std::optional<int64_t> memory_used_bytes;
  std::optional<int64_t> memory_total_bytes;
  std::optional<double> temperature_celsius;
  std::optional<double> power_watts;
};

class DevicePlugin {
 public:
  virtual ~DevicePlugin() = default;
  virtual std::vector<DeviceInfo> probe() = 0;
  // Environment variables to set before LibTorch starts, for the chosen device and plan.
  virtual std::vector<EnvVar> prepare(int32_t /*device_index*/, const std::string& /*plan_json*/) {
    return {};
  }
  virtual TelemetrySample telemetry(int32_t /*device_index*/, int64_t /*pid*/) {
    throw Error(MLH_ERR_UNSUPPORTED, "this plugin reports no telemetry");
  }
};

struct AlgorithmDescription {
  std::string summary;
  std::vector<std::string> commands;  // the first is the default
  std::string config_schema_json = "{}";
  std::string config_defaults_json = "{}";
  std::string presets_json = "{}";
};

namespace detail {

// Rewrites a summary before it reaches the host. The training runtime installs one that adds
// what the run applied of the plan (mlh/runtime/plan_effects.hpp); null: sent as given.
using SummaryFilter = std::string (*)(const std::string& summary_json);
inline SummaryFilter& summary_filter() {
  static SummaryFilter filter = nullptr;
  return filter;
}

}  // namespace detail

// What a run gets: its inputs and the host's callbacks.
class RunContext {
 public:
  explicit RunContext(const mlh_run_context& c) : c_(c) {}
  std::string command() const { return str(c_.command); }
  std::string config_json() const { return str(c_.config_json); }
  std::string device_json() const { return str(c_.device_json); }
  std::string torch_device() const { return str(c_.torch_device); }
  std::string plan_json() const { return str(c_.plan_json); }
  std::string run_dir() const { return str(c_.run_dir); }
  bool resume() const { return c_.resume != 0; }
  int32_t rank() const { return c_.rank; }
  int32_t world_size() const { return c_.world_size; }
  int32_t local_rank() const { return c_.local_rank; }

  void log(int32_t level, const std::string& message) const {
    c_.host->log(c_.host->host_data, level, message.c_str());
  }
  void info(const std::string& message) const { log(MLH_LOG_INFO, message); }
  void warn(const std::string& message) const { log(MLH_LOG_WARN, message); }
  void metric(const std::string& name, double value, int64_t step) const {
    c_.host->metric(c_.host->host_data, name.c_str(), value, step);
  }
  void progress(int64_t done, int64_t total, const std::string& unit) const {
    c_.host->progress(c_.host->host_data, done, total, unit.c_str());
  }
  bool should_stop() const { return c_.host->should_stop(c_.host->host_data) != 0; }
  void summary(const std::string& json) const {
    const detail::SummaryFilter filter = detail::summary_filter();
    c_.host->summary(c_.host->host_data, (filter ? filter(json) : json).c_str());
  }
  const mlh_run_context& raw() const { return c_; }

 private:
  static std::string str(const char* s) { return s ? std::string(s) : std::string(); }
  const mlh_run_context& c_;
};

class AlgorithmPlugin {
 public:
  virtual ~AlgorithmPlugin() = default;
  virtual AlgorithmDescription describe() = 0;
  // Runs ctx.command() to the end. Throw mlh::Error to fail; when ctx.should_stop() turns
  // true, save what must be saved and throw Error(MLH_ERR_CANCELLED, ...).
  virtual void run(RunContext& ctx) = 0;
  // ABI 1.1, optional: what run(ctx) would do, without training (mlh_algorithm_plugin's
  // describe_run): a JSON object {"model": {"parameters": N, "shape": "..."}, "plan_fields":
  // {"<plan field>": "what it does" | {"no_effect": "why"}}} (docs/plugin-guide.md). A class
  // that does not override it leaves the table's pointer NULL.
  virtual std::string describe_run(const RunContext& /*ctx*/) {
    throw Error(MLH_ERR_UNSUPPORTED, "describe_run is not implemented");
  }
};

namespace detail {

inline void set_error(mlh_error* error, mlh_status code, const char* message) {
  if (!MLH_HAS_FIELD(error, mlh_error, message)) return;
  error->code = code;
  const char* m = message ? message : "";
  size_t n = std::strlen(m);
  if (n > MLH_ERROR_MESSAGE_CAPACITY - 1) {
    n = MLH_ERROR_MESSAGE_CAPACITY - 1;
    while (n > 0 && (static_cast<unsigned char>(m[n]) & 0xC0) == 0x80) --n;  // keep UTF-8 whole
  }
  std::memcpy(error->message, m, n);
  error->message[n] = '\0';
}

// Runs f, turning every exception into an error value. Nothing escapes.
template <class F>
mlh_status guard(mlh_error* error, F&& f) noexcept {
  try {
    f();
    return MLH_OK;
  } catch (const Error& e) {
    set_error(error, e.code(), e.what());
    return e.code();
  } catch (const std::bad_alloc&) {
    set_error(error, MLH_ERR_OUT_OF_MEMORY, "out of memory");
    return MLH_ERR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    std::string msg = std::string("uncaught exception: ") + e.what();
    set_error(error, MLH_ERR_INTERNAL, msg.c_str());
    return MLH_ERR_INTERNAL;
  } catch (...) {
    set_error(error, MLH_ERR_INTERNAL, "uncaught exception of unknown type");
    return MLH_ERR_INTERNAL;
  }
}

// Picks the host's first offered version with our major; minor is the lower of the two.
inline mlh_status negotiate(const mlh_negotiate_request* request, mlh_negotiate_response* response,
                            mlh_error* error, int32_t kind, const char* name, const char* version,
                            const void* table) noexcept {
  if (!MLH_HAS_FIELD(request, mlh_negotiate_request, version_count) ||
      !MLH_HAS_FIELD(response, mlh_negotiate_response, table)) {
    set_error(error, MLH_ERR_INVALID_ARGUMENT, "negotiate: missing or too small request/response");
    return MLH_ERR_INVALID_ARGUMENT;
  }
  const uint32_t our_minor = MLH_ABI_VERSION_MINOR;  // a variable: no -Wtype-limits while it is 0
  for (uint32_t i = 0; request->versions && i < request->version_count; ++i) {
    const mlh_abi_version& offered = request->versions[i];
    if (offered.major != MLH_ABI_VERSION_MAJOR) continue;
    response->abi_major = MLH_ABI_VERSION_MAJOR;
    response->abi_minor = offered.minor < our_minor ? offered.minor : our_minor;
    response->kind = kind;
    response->name = name;
    response->version = version;
    response->table = table;
    return MLH_OK;
  }
  std::string msg = std::string("plugin speaks ABI ") + std::to_string(MLH_ABI_VERSION_MAJOR) + "." +
                    std::to_string(MLH_ABI_VERSION_MINOR) + ", host offered no version with that major";
  set_error(error, MLH_ERR_VERSION, msg.c_str());
  return MLH_ERR_VERSION;
}

template <class T>
struct DeviceInstance {
  T plugin;
  std::vector<DeviceInfo> infos;
  std::vector<mlh_device_record> records;
  std::vector<EnvVar> env;
  std::vector<mlh_env_var> env_records;
};

inline const char* c_or_null(const std::string& s) { return s.empty() ? nullptr : s.c_str(); }

inline mlh_device_record to_record(const DeviceInfo& d) {
  mlh_device_record r{};
  r.struct_size = sizeof(r);
  r.device_class = d.device_class;
  r.index = d.index;
  r.available = d.available ? 1 : 0;
  r.kind = d.kind.c_str();
  r.name = d.name.c_str();
  r.vendor = c_or_null(d.vendor);
  r.torch_device = d.torch_device.c_str();
  r.unavailable_reason = c_or_null(d.unavailable_reason);
  r.uuid = c_or_null(d.uuid);
  r.pci_bus_id = c_or_null(d.pci_bus_id);
  r.driver_version = c_or_null(d.driver_version);
  r.runtime_version = c_or_null(d.runtime_version);
  r.memory_total_bytes = d.memory_total_bytes;
  r.memory_free_bytes = d.memory_free_bytes;
  r.memory_unified = d.memory_unified ? 1 : 0;
  r.compute_units = d.compute_units;
  r.logical_units = d.logical_units;
  r.capability_major = d.capability_major;
  r.capability_minor = d.capability_minor;
  r.precisions = d.precisions;
  r.fast_precisions = d.fast_precisions;
  r.limitations = d.limitations;
  r.recommended_threads = d.recommended_threads;
  r.score_hint = d.score_hint;
  r.features = c_or_null(d.features);
  r.details_json = c_or_null(d.details_json);
  return r;
}

template <class T>
struct DeviceTable {
  static DeviceInstance<T>* self(mlh_plugin_instance* p) { return reinterpret_cast<DeviceInstance<T>*>(p); }

  static mlh_status create(mlh_plugin_instance** out, mlh_error* error) {
    return guard(error, [&] { *out = reinterpret_cast<mlh_plugin_instance*>(new DeviceInstance<T>()); });
  }
  static void destroy(mlh_plugin_instance* p) {
    try {
      delete self(p);
    } catch (...) {
    }
  }
  static mlh_status probe(mlh_plugin_instance* p, const mlh_device_record** out, uint32_t* count,
                          mlh_error* error) {
    return guard(error, [&] {
      auto* s = self(p);
      s->infos = s->plugin.probe();
      s->records.clear();
      for (const auto& d : s->infos) s->records.push_back(to_record(d));
      *out = s->records.data();
      *count = static_cast<uint32_t>(s->records.size());
    });
  }
  static mlh_status prepare(mlh_plugin_instance* p, const mlh_prepare_request* request,
                            const mlh_env_var** out, uint32_t* count, mlh_error* error) {
    return guard(error, [&] {
      if (!request) throw Error(MLH_ERR_INVALID_ARGUMENT, "prepare: no request");
      auto* s = self(p);
      s->env = s->plugin.prepare(request->device_index, request->plan_json ? request->plan_json : "{}");
      s->env_records.clear();
      for (const auto& v : s->env) s->env_records.push_back({sizeof(mlh_env_var), v.name.c_str(), v.value.c_str()});
      *out = s->env_records.data();
      *count = static_cast<uint32_t>(s->env_records.size());
    });
  }
  static mlh_status telemetry(mlh_plugin_instance* p, int32_t index, int64_t pid, mlh_telemetry_sample* out,
                              mlh_error* error) {
    return guard(error, [&] {
      if (!MLH_HAS_FIELD(out, mlh_telemetry_sample, valid_fields))
        throw Error(MLH_ERR_INVALID_ARGUMENT, "telemetry: sample struct too small");
      TelemetrySample t = self(p)->plugin.telemetry(index, pid);
      out->valid_fields = 0;
      auto put = [&](auto field_ptr, uint32_t bit, const auto& value) {
        if (value && reinterpret_cast<const char*>(&(out->*field_ptr)) + sizeof(out->*field_ptr) <=
                         reinterpret_cast<const char*>(out) + out->struct_size) {
          out->*field_ptr = *value;
          out->valid_fields |= bit;
        }
      };
      put(&mlh_telemetry_sample::utilization_percent, MLH_TELEMETRY_UTILIZATION, t.utilization_percent);
      put(&mlh_telemetry_sample::memory_used_bytes, MLH_TELEMETRY_MEMORY_USED, t.memory_used_bytes);
      put(&mlh_telemetry_sample::memory_total_bytes, MLH_TELEMETRY_MEMORY_TOTAL, t.memory_total_bytes);
      put(&mlh_telemetry_sample::temperature_celsius, MLH_TELEMETRY_TEMPERATURE, t.temperature_celsius);
      put(&mlh_telemetry_sample::power_watts, MLH_TELEMETRY_POWER, t.power_watts);
    });
  }
  static const mlh_device_plugin* table() {
    static const mlh_device_plugin t = {sizeof(mlh_device_plugin), &create, &destroy, &probe, &prepare, &telemetry};
    return &t;
  }
};

template <class T>
struct AlgorithmInstance {
  T plugin;
  AlgorithmDescription description;
  std::vector<const char*> command_ptrs;
  std::string name, version;
  mlh_algorithm_description record{};
  std::string run_description;  // describe_run's answer, valid until the next call
};

template <class T>
struct AlgorithmTable {
  static AlgorithmInstance<T>* self(mlh_plugin_instance* p) {
    return reinterpret_cast<AlgorithmInstance<T>*>(p);
  }
  static mlh_status create(mlh_plugin_instance** out, mlh_error* error) {
    return guard(error, [&] { *out = reinterpret_cast<mlh_plugin_instance*>(new AlgorithmInstance<T>()); });
  }
  static void destroy(mlh_plugin_instance* p) {
    try {
      delete self(p);
    } catch (...) {
    }
  }
  static mlh_status describe(mlh_plugin_instance* p, const mlh_algorithm_description** out, mlh_error* error,
                             const char* name, const char* version) {
    return guard(error, [&] {
      auto* s = self(p);
      s->description = s->plugin.describe();
      s->name = name;
      s->version = version;
      s->command_ptrs.clear();
      for (const auto& c : s->description.commands) s->command_ptrs.push_back(c.c_str());
      mlh_algorithm_description& r = s->record;
      r = mlh_algorithm_description{};
      r.struct_size = sizeof(r);
      r.name = s->name.c_str();
      r.version = s->version.c_str();
      r.summary = s->description.summary.c_str();
      r.commands = s->command_ptrs.data();
      r.command_count = static_cast<uint32_t>(s->command_ptrs.size());
      r.config_schema_json = s->description.config_schema_json.c_str();
      r.config_defaults_json = s->description.config_defaults_json.c_str();
      r.presets_json = s->description.presets_json.c_str();
      *out = &r;
    });
  }
  static mlh_status run(mlh_plugin_instance* p, const mlh_run_context* context, mlh_error* error) {
    return guard(error, [&] {
      if (!MLH_HAS_FIELD(context, mlh_run_context, host) || !context->host)
        throw Error(MLH_ERR_INVALID_ARGUMENT, "run: context too small or without host callbacks");
      RunContext ctx(*context);
      self(p)->plugin.run(ctx);
    });
  }
  static mlh_status describe_run(mlh_plugin_instance* p, const mlh_run_context* context, const char** out,
                                 mlh_error* error) {
    return guard(error, [&] {
      if (!MLH_HAS_FIELD(context, mlh_run_context, host) || !context->host || !out)
        throw Error(MLH_ERR_INVALID_ARGUMENT, "describe_run: context too small, without host callbacks or output");
      auto* s = self(p);
      s->run_description = s->plugin.describe_run(RunContext(*context));
      *out = s->run_description.c_str();
    });
  }
  // describe_run's entry when T overrides AlgorithmPlugin::describe_run, else NULL.
  static constexpr auto describe_run_entry() {
    using Base = std::string (AlgorithmPlugin::*)(const RunContext&);
    return std::is_same<decltype(&T::describe_run), Base>::value ? nullptr : &describe_run;
  }
};

}  // namespace detail
}  // namespace mlh

#if !defined(MLH_PLUGIN_NAME) || !defined(MLH_PLUGIN_VERSION)
#define MLH_PLUGIN_IDENTITY_MISSING_ \
  static_assert(false, "define MLH_PLUGIN_NAME and MLH_PLUGIN_VERSION (mlh_add_plugin() does)");
#else
#define MLH_PLUGIN_IDENTITY_MISSING_
#endif

// Exports the entry symbol for a device plugin implemented by class T.
#define MLH_DEVICE_PLUGIN(T)                                                                            \
  MLH_PLUGIN_IDENTITY_MISSING_                                                                          \
  extern "C" MLH_EXPORT mlh_status mlh_plugin_negotiate(const mlh_negotiate_request* request,           \
                                                        mlh_negotiate_response* response, mlh_error* error) { \
    return ::mlh::detail::negotiate(request, response, error, MLH_PLUGIN_KIND_DEVICE, MLH_PLUGIN_NAME,     \
                                    MLH_PLUGIN_VERSION, ::mlh::detail::DeviceTable<T>::table());        \
  }

// Exports the entry symbol for an algorithm plugin implemented by class T.
#define MLH_ALGORITHM_PLUGIN(T)                                                                          \
  MLH_PLUGIN_IDENTITY_MISSING_                                                                           \
  namespace mlh_generated_ {                                                                             \
  mlh_status describe(mlh_plugin_instance* p, const mlh_algorithm_description** out, mlh_error* error) { \
    return ::mlh::detail::AlgorithmTable<T>::describe(p, out, error, MLH_PLUGIN_NAME, MLH_PLUGIN_VERSION); \
  }                                                                                                      \
  const mlh_algorithm_plugin table = {sizeof(mlh_algorithm_plugin), &::mlh::detail::AlgorithmTable<T>::create, \
                                      &::mlh::detail::AlgorithmTable<T>::destroy, &describe,           \
                                      &::mlh::detail::AlgorithmTable<T>::run,                            \
                                      ::mlh::detail::AlgorithmTable<T>::describe_run_entry()};           \
  }                                                                                                      \
  extern "C" MLH_EXPORT mlh_status mlh_plugin_negotiate(const mlh_negotiate_request* request,            \
                                                        mlh_negotiate_response* response, mlh_error* error) { \
    return ::mlh::detail::negotiate(request, response, error, MLH_PLUGIN_KIND_ALGORITHM, MLH_PLUGIN_NAME,   \
                                    MLH_PLUGIN_VERSION, &mlh_generated_::table);                         \
  }


#endif  // MLH_PLUGIN_HPP
