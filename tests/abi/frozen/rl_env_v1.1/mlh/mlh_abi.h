/*
 * mlhost plugin C ABI: common part (versions, errors, negotiation).
 *
 * This header is the promise mlhost makes to plugin authors. Rules (see docs/plugin-guide.md):
 *  - Pure C11. No C++ types, exceptions or STL cross the boundary; every exported
 *    function catches everything inside.
 *  - Every struct starts with `uint32_t struct_size`, set by whoever fills the struct.
 *    Fields are only ever appended; a reader checks MLH_HAS_FIELD before reading a field
 *    added after v1.0.
 *  - Fixed-width integers; no bool (int32_t 0/1); no C enums in struct fields (int32_t
 *    with the named constants below).
 *  - Errors are values (mlh_status + mlh_error), never aborts.
 *  - Strings are NUL-terminated UTF-8 and owned by the side that made them; each
 *    function documents how long returned strings stay valid.
 *  - A function pointer that a plugin has nothing for is NULL; the host never calls NULL.
 *  - Threads: the host calls the functions of one plugin instance from one thread at a
 *    time (never concurrently), so a plugin needs no locking for its own state. Host
 *    callbacks given to a plugin may be called from any thread.
 */
#ifndef MLH_ABI_H
#define MLH_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ABI version this header describes. Major must match between host and plugin; a plugin
 * may speak an older or newer minor than the host. */
#define MLH_ABI_VERSION_MAJOR 1
#define MLH_ABI_VERSION_MINOR 1

#if defined(_WIN32)
#define MLH_EXPORT __declspec(dllexport)
#else
#define MLH_EXPORT __attribute__((visibility("default")))
#endif

/* True when a struct of the given (reader-side) size holds `field` completely. */
#define MLH_HAS_FIELD(ptr, type, field) \
  ((ptr) != NULL && (size_t)(ptr)->struct_size >= offsetof(type, field) + sizeof(((type*)0)->field))

/* Status codes returned by every ABI function (int32_t). */
typedef int32_t mlh_status;
#define MLH_OK 0
#define MLH_ERR_UNKNOWN 1
#define MLH_ERR_INVALID_ARGUMENT 2 /* a bad value from the caller (config, plan, index) */
#define MLH_ERR_UNSUPPORTED 3      /* the plugin does not support what was asked */
#define MLH_ERR_UNAVAILABLE 4      /* hardware, driver or resource not available */
#define MLH_ERR_VERSION 5          /* no common ABI version */
#define MLH_ERR_OUT_OF_MEMORY 6
#define MLH_ERR_IO 7               /* reading or writing files failed */
#define MLH_ERR_CANCELLED 8        /* stopped because the host asked (should_stop) */
#define MLH_ERR_INTERNAL 9         /* a bug or an unexpected exception inside the plugin */

#define MLH_ERROR_MESSAGE_CAPACITY 1024

/* An error value. The caller owns it (usually on its stack), sets struct_size, and passes
 * it to a function; on failure the callee writes a code and a NUL-terminated message,
 * truncated to the capacity. */
typedef struct mlh_error {
  uint32_t struct_size;
  int32_t code; /* one of MLH_OK / MLH_ERR_* */
  char message[MLH_ERROR_MESSAGE_CAPACITY];
} mlh_error;

/* Plugin kinds (int32_t). */
#define MLH_PLUGIN_KIND_DEVICE 1
#define MLH_PLUGIN_KIND_ALGORITHM 2

/* Log levels (int32_t), the same order as spdlog's. */
#define MLH_LOG_TRACE 0
#define MLH_LOG_DEBUG 1
#define MLH_LOG_INFO 2
#define MLH_LOG_WARN 3
#define MLH_LOG_ERROR 4

/* One ABI version: a major and the highest minor spoken for it. */
typedef struct mlh_abi_version {
  uint32_t struct_size;
  uint32_t major;
  uint32_t minor;
} mlh_abi_version;

/* What the host offers. Valid only during the negotiate call. */
typedef struct mlh_negotiate_request {
  uint32_t struct_size;
  const mlh_abi_version* versions; /* the versions the host speaks, best first. mlh_abi_version
                                      is frozen (never extended), so this array's stride is fixed */
  uint32_t version_count;
  int32_t expected_kind;           /* MLH_PLUGIN_KIND_*: what the host is loading it as */
  const char* host_name;           /* "mlhost" */
  const char* host_version;        /* e.g. "0.1.0" */
} mlh_negotiate_request;

/* What the plugin answers. The host sets struct_size; the plugin fills the fields that fit.
 * Strings and the table have static lifetime (valid until the library is unloaded). */
typedef struct mlh_negotiate_response {
  uint32_t struct_size;
  uint32_t abi_major;       /* the chosen version: a major the host offered ... */
  uint32_t abi_minor;       /* ... and min(host minor, plugin minor) for it */
  int32_t kind;             /* MLH_PLUGIN_KIND_* */
  const char* name;         /* must equal the manifest's "name" */
  const char* version;      /* the plugin's own version, must equal the manifest's */
  const void* table;        /* const mlh_device_plugin* or const mlh_algorithm_plugin* */
} mlh_negotiate_response;

/* The one entry symbol every plugin exports. Returns MLH_OK and fills `response`, or
 * MLH_ERR_VERSION (no common major) / another code and fills `error`. */
#define MLH_ENTRY_SYMBOL "mlh_plugin_negotiate"
typedef mlh_status (*mlh_negotiate_fn)(const mlh_negotiate_request* request,
                                       mlh_negotiate_response* response, mlh_error* error);

/* Opaque per-plugin state created by a table's create function. */
typedef struct mlh_plugin_instance mlh_plugin_instance;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MLH_ABI_H */
