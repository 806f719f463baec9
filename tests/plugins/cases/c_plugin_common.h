/* Shared by the raw C test plugins (no C++ helper): error values and a correct version
 * negotiation, written the way a third-party C plugin author would. Header-only, static. */
#ifndef MLH_TEST_C_PLUGIN_COMMON_H
#define MLH_TEST_C_PLUGIN_COMMON_H

#include <string.h>

#include <mlh/mlh.h>

/* Not every plugin uses every helper. */
#if defined(__GNUC__)
#define MLH_TEST_UNUSED __attribute__((unused))
#else
#define MLH_TEST_UNUSED
#endif

MLH_TEST_UNUSED static void c_set_error(mlh_error* error, mlh_status code, const char* message) {
  if (!MLH_HAS_FIELD(error, mlh_error, message)) return;
  error->code = code;
  strncpy(error->message, message, MLH_ERROR_MESSAGE_CAPACITY - 1);
  error->message[MLH_ERROR_MESSAGE_CAPACITY - 1] = '\0';
}

/* Picks the host's first offered version with our major (minor: the lower of the two) and
 * answers `answer_major` (MLH_ABI_VERSION_MAJOR for a correct plugin) with our name,
 * version, kind and table. */
MLH_TEST_UNUSED static mlh_status c_negotiate(const mlh_negotiate_request* request, mlh_negotiate_response* response,
                              mlh_error* error, uint32_t answer_major, int32_t kind, const void* table) {
  uint32_t i;
  const uint32_t our_minor = MLH_ABI_VERSION_MINOR;
  if (!MLH_HAS_FIELD(request, mlh_negotiate_request, version_count) ||
      !MLH_HAS_FIELD(response, mlh_negotiate_response, table)) {
    c_set_error(error, MLH_ERR_INVALID_ARGUMENT, "negotiate: missing or too small request/response");
    return MLH_ERR_INVALID_ARGUMENT;
  }
  for (i = 0; request->versions != NULL && i < request->version_count; ++i) {
    const mlh_abi_version* offered = &request->versions[i];
    if (offered->major != MLH_ABI_VERSION_MAJOR) continue;
    response->abi_major = answer_major;
    response->abi_minor = offered->minor < our_minor ? offered->minor : our_minor;
    response->kind = kind;
    response->name = MLH_PLUGIN_NAME;
    response->version = MLH_PLUGIN_VERSION;
    response->table = table;
    return MLH_OK;
  }
  c_set_error(error, MLH_ERR_VERSION, "C test plugin speaks ABI 1.x; the host offered no 1.x");
  return MLH_ERR_VERSION;
}

/* A plausible CPU-class record (everything a host checks is valid). */
MLH_TEST_UNUSED static mlh_device_record c_cpu_record(const char* kind, const char* name) {
  mlh_device_record r;
  memset(&r, 0, sizeof(r));
  r.struct_size = (uint32_t)sizeof(r);
  r.device_class = MLH_DEVICE_CLASS_CPU;
  r.index = 0;
  r.available = 1;
  r.kind = kind;
  r.name = name;
  r.vendor = "mlhost tests";
  r.torch_device = "cpu";
  r.memory_total_bytes = MLH_UNKNOWN;
  r.memory_free_bytes = MLH_UNKNOWN;
  r.memory_unified = 1;
  r.compute_units = 1;
  r.logical_units = 1;
  r.capability_major = MLH_UNKNOWN;
  r.capability_minor = MLH_UNKNOWN;
  r.precisions = MLH_PRECISION_FP32 | MLH_PRECISION_FP64;
  r.fast_precisions = MLH_PRECISION_FP32;
  r.recommended_threads = 1;
  return r;
}

#endif /* MLH_TEST_C_PLUGIN_COMMON_H */
