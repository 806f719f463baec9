/* Shared by the C and C++ ABI layout tests (plain C, compiles as C99, C11 and C++).
 *
 * - Named types for the `ftype` column of abi_layout_lp64.def (function pointers and arrays
 *   cannot be one macro argument otherwise). The signatures written here are locked too.
 * - mlh_abi_layout_row and the macros that turn the X-macro lists into rows, so the C table
 *   (computed by the C compiler) and the C++ table (computed by the C++ compiler) come
 *   from one list and one macro. */
#ifndef MLH_TEST_ABI_LAYOUT_H
#define MLH_TEST_ABI_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include <mlh/mlh.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef char mlh_abi_t_message[1024];

typedef mlh_status (*mlh_abi_t_create_fn)(mlh_plugin_instance** out_instance, mlh_error* error);
typedef void (*mlh_abi_t_destroy_fn)(mlh_plugin_instance* instance);
typedef mlh_status (*mlh_abi_t_probe_fn)(mlh_plugin_instance* instance,
                                         const mlh_device_record** out_records,
                                         uint32_t* out_count, mlh_error* error);
typedef mlh_status (*mlh_abi_t_prepare_fn)(mlh_plugin_instance* instance,
                                           const mlh_prepare_request* request,
                                           const mlh_env_var** out_vars, uint32_t* out_count,
                                           mlh_error* error);
typedef mlh_status (*mlh_abi_t_telemetry_fn)(mlh_plugin_instance* instance, int32_t device_index,
                                             int64_t pid, mlh_telemetry_sample* sample,
                                             mlh_error* error);
typedef mlh_status (*mlh_abi_t_describe_fn)(mlh_plugin_instance* instance,
                                            const mlh_algorithm_description** out,
                                            mlh_error* error);
typedef mlh_status (*mlh_abi_t_run_fn)(mlh_plugin_instance* instance,
                                       const mlh_run_context* context, mlh_error* error);
typedef mlh_status (*mlh_abi_t_describe_run_fn)(mlh_plugin_instance* instance,
                                                const mlh_run_context* context,
                                                const char** out_json, mlh_error* error);
typedef void (*mlh_abi_t_log_fn)(void* host_data, int32_t level, const char* message);
typedef void (*mlh_abi_t_metric_fn)(void* host_data, const char* name, double value,
                                    int64_t step);
typedef void (*mlh_abi_t_progress_fn)(void* host_data, int64_t done, int64_t total,
                                      const char* unit);
typedef int32_t (*mlh_abi_t_should_stop_fn)(void* host_data);
typedef void (*mlh_abi_t_summary_fn)(void* host_data, const char* summary_json);
/* The entry point's type, mlh_negotiate_fn, spelled out. */
typedef mlh_status (*mlh_abi_t_negotiate_fn)(const mlh_negotiate_request* request,
                                             mlh_negotiate_response* response, mlh_error* error);

/* One row of a layout table: a whole struct (field == NULL; offset 0) or one field
 * (align 0). expected_* are the locked LP64 numbers, the others what a compiler computed.
 * A struct that a later minor grew has a second whole-struct row with its size since then
 * (since_minor > 0); its current size is that of its last row. */
typedef struct mlh_abi_layout_row {
  const char* type;
  const char* field;
  size_t expected_offset, offset;
  size_t expected_size, size;
  size_t expected_align, align;
  unsigned since_minor;
} mlh_abi_layout_row;

#ifdef __cplusplus
#define MLH_ABI_ALIGNOF_(T) alignof(T)
#else
#define MLH_ABI_ALIGNOF_(T) _Alignof(T)
#endif

/* Row generators for abi_layout_lp64.def. */
#define MLH_ABI_STRUCT_ROW(T, size_, align_) \
  {#T, NULL, 0, 0, (size_), sizeof(T), (align_), MLH_ABI_ALIGNOF_(T), 0},
#define MLH_ABI_FIELD_ROW(T, f, off_, size_, ftype) \
  {#T, #f, (off_), offsetof(T, f), (size_), sizeof(((T*)0)->f), 0, 0, 0},
#define MLH_ABI_GROWN_ROW(T, minor, size_) \
  {#T, NULL, 0, 0, (size_), sizeof(T), 0, MLH_ABI_ALIGNOF_(T), (minor)},

/* Rows that a later minor appended to abi_layout_lp64.def describe what headers of at least
 * that minor hold: checked against the current headers, left out against a frozen copy of
 * an older release (frozen/v1.0), whose structs end before them. One line per minor. */
#if MLH_ABI_VERSION_MINOR >= 1
#define MLH_ABI_SINCE_1(row) row
#else
#define MLH_ABI_SINCE_1(row)
#endif

/* The table as the C compiler sees it (abi_static_c11.c). */
extern const mlh_abi_layout_row mlh_abi_c_layout[];
extern const size_t mlh_abi_c_layout_count;
/* Small functions of the C objects, called by the C++ test so they are linked and run. */
int mlh_abi_c11_has_field_checks(void);
int mlh_abi_c99_smoke(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MLH_TEST_ABI_LAYOUT_H */
