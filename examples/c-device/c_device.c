/* A device plugin in plain C against the raw C ABI (mlh/mlh.h), without the C++ helper: one
 * CPU-class device, "c-device:0", that runs on LibTorch's "cpu". prepare and telemetry are
 * NULL: the host never calls a NULL function. Every rule of the ABI is here by hand: the
 * struct sizes, errors as values, negotiation, records that stay valid until the next call. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mlh/mlh.h>

struct mlh_plugin_instance {
  mlh_device_record record; /* valid until the next probe or destroy */
};

/* Fills the caller's error, if it is large enough to hold a message. */
static void set_error(mlh_error* error, mlh_status code, const char* message) {
  if (!MLH_HAS_FIELD(error, mlh_error, message)) return;
  error->code = code;
  strncpy(error->message, message, MLH_ERROR_MESSAGE_CAPACITY - 1);
  error->message[MLH_ERROR_MESSAGE_CAPACITY - 1] = '\0';
}

static mlh_status c_device_create(mlh_plugin_instance** out, mlh_error* error) {
  mlh_plugin_instance* self = (mlh_plugin_instance*)calloc(1, sizeof(*self));
  if (self == NULL) {
    set_error(error, MLH_ERR_OUT_OF_MEMORY, "c-device: out of memory");
    return MLH_ERR_OUT_OF_MEMORY;
  }
  *out = self;
  return MLH_OK;
}

static void c_device_destroy(mlh_plugin_instance* self) { free(self); }

static mlh_status c_device_probe(mlh_plugin_instance* self, const mlh_device_record** out, uint32_t* count,
                                 mlh_error* error) {
  mlh_device_record* r;
  long cores;
  if (self == NULL || out == NULL || count == NULL) {
    set_error(error, MLH_ERR_INVALID_ARGUMENT, "c-device: probe got a NULL argument");
    return MLH_ERR_INVALID_ARGUMENT;
  }
  r = &self->record;
  memset(r, 0, sizeof(*r));
  r->struct_size = (uint32_t)sizeof(*r);
  r->device_class = MLH_DEVICE_CLASS_CPU;
  r->index = 0;
  r->available = 1;
  r->kind = "c-device";
  r->name = "CPU seen by a C plugin";
  r->vendor = "example";
  r->torch_device = "cpu";
  r->memory_total_bytes = MLH_UNKNOWN; /* unknown: the host plans without it */
  r->memory_free_bytes = MLH_UNKNOWN;
  r->memory_unified = 1;
  cores = sysconf(_SC_NPROCESSORS_ONLN);
  r->compute_units = cores > 0 ? (int32_t)cores : MLH_UNKNOWN;
  r->logical_units = r->compute_units;
  r->capability_major = MLH_UNKNOWN;
  r->capability_minor = MLH_UNKNOWN;
  r->precisions = MLH_PRECISION_FP32 | MLH_PRECISION_FP64;
  r->fast_precisions = MLH_PRECISION_FP32;
  r->recommended_threads = r->compute_units;
  *out = r;
  *count = 1;
  return MLH_OK;
}

/* Static lifetime: the host keeps the pointer while the library is loaded. */
static const mlh_device_plugin c_device_table = {
    sizeof(mlh_device_plugin), c_device_create, c_device_destroy, c_device_probe, NULL, NULL};

/* The host offers its ABI versions, best first; take the first with our major, answer the
 * lower minor, and our kind, name and version (mlh_add_plugin defines the last two from the
 * same values it writes into the manifest). */
MLH_EXPORT mlh_status mlh_plugin_negotiate(const mlh_negotiate_request* request, mlh_negotiate_response* response,
                                           mlh_error* error) {
  uint32_t i;
  if (!MLH_HAS_FIELD(request, mlh_negotiate_request, version_count) ||
      !MLH_HAS_FIELD(response, mlh_negotiate_response, table)) {
    set_error(error, MLH_ERR_INVALID_ARGUMENT, "c-device: negotiation request or response too small");
    return MLH_ERR_INVALID_ARGUMENT;
  }
  for (i = 0; request->versions != NULL && i < request->version_count; ++i) {
    const mlh_abi_version* offered = &request->versions[i];
    if (offered->major != MLH_ABI_VERSION_MAJOR) continue;
    response->abi_major = MLH_ABI_VERSION_MAJOR;
    response->abi_minor = offered->minor < MLH_ABI_VERSION_MINOR ? offered->minor : MLH_ABI_VERSION_MINOR;
    response->kind = MLH_PLUGIN_KIND_DEVICE;
    response->name = MLH_PLUGIN_NAME;
    response->version = MLH_PLUGIN_VERSION;
    response->table = &c_device_table;
    return MLH_OK;
  }
  set_error(error, MLH_ERR_VERSION, "c-device speaks ABI 1.x; the host offered no 1.x");
  return MLH_ERR_VERSION;
}
