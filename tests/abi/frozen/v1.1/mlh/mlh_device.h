/*
 * mlhost plugin C ABI: device plugins.
 *
 * A device plugin probes the machine for devices of one kind and reports what each can
 * do. It must not link LibTorch and must load on any machine: when its hardware or driver
 * is missing it reports no device, or a device with available = 0 and a reason.
 */
#ifndef MLH_DEVICE_H
#define MLH_DEVICE_H

#include "mlh_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Device classes (int32_t), in the ranking order the host uses (higher ranks first). */
#define MLH_DEVICE_CLASS_OTHER 0
#define MLH_DEVICE_CLASS_CPU 1
#define MLH_DEVICE_CLASS_UNIFIED_GPU 2  /* GPU sharing memory with the CPU (Apple MPS) */
#define MLH_DEVICE_CLASS_DISCRETE_GPU 3 /* GPU with its own memory (CUDA) */

/* Precision bits (uint32_t masks). */
#define MLH_PRECISION_FP32 0x1u
#define MLH_PRECISION_FP16 0x2u
#define MLH_PRECISION_BF16 0x4u
#define MLH_PRECISION_TF32 0x8u
#define MLH_PRECISION_FP64 0x10u
#define MLH_PRECISION_INT8 0x20u

/* Limitation bits (uint32_t masks): things a device cannot do that the host must respect. */
#define MLH_LIMIT_NO_DISTRIBUTED 0x1u     /* cannot join multi-process training */
#define MLH_LIMIT_NO_FP16_AUTOCAST 0x2u   /* fp16 autocast not used; run fp32 */
#define MLH_LIMIT_NO_GRAPH_COMPILE 0x4u   /* no graph compilation */
#define MLH_LIMIT_NO_MEMORY_FRACTION 0x8u /* a memory fraction cannot be enforced */

/* "Unknown" for the signed integer figures below. */
#define MLH_UNKNOWN (-1)

/* One device. Filled and owned by the plugin (it sets struct_size); valid until the next
 * probe call on the same instance or until destroy. Any string may be NULL (unknown)
 * except kind, name and torch_device. */
typedef struct mlh_device_record {
  uint32_t struct_size;
  int32_t device_class;        /* MLH_DEVICE_CLASS_* */
  int32_t index;               /* index among this plugin's devices, from 0 */
  int32_t available;           /* 1 usable, 0 not (then unavailable_reason says why) */
  const char* kind;            /* "cpu", "cuda", "mps", ... (the plugin's device kind) */
  const char* name;            /* e.g. "AMD EPYC 9454", "NVIDIA A100-SXM4-40GB" */
  const char* vendor;          /* e.g. "AuthenticAMD", "NVIDIA", "Apple" */
  const char* torch_device;    /* LibTorch device string: "cpu", "cuda:0", "mps" */
  const char* unavailable_reason;
  const char* uuid;            /* GPU UUID where known */
  const char* pci_bus_id;      /* e.g. "0000:3b:00.0" where known */
  const char* driver_version;
  const char* runtime_version; /* e.g. highest CUDA version the driver supports */
  int64_t memory_total_bytes;  /* MLH_UNKNOWN if unknown */
  int64_t memory_free_bytes;   /* MLH_UNKNOWN if unknown */
  int32_t memory_unified;      /* 1 when the device shares the host's RAM */
  int32_t compute_units;       /* CPU: usable physical cores; CUDA: SMs; MLH_UNKNOWN */
  int32_t logical_units;       /* CPU: usable logical CPUs; else MLH_UNKNOWN */
  int32_t capability_major;    /* CUDA compute capability; MLH_UNKNOWN elsewhere */
  int32_t capability_minor;
  uint32_t precisions;         /* MLH_PRECISION_* the device can run */
  uint32_t fast_precisions;    /* subset it runs fast (native hardware support) */
  uint32_t limitations;        /* MLH_LIMIT_* */
  int32_t recommended_threads; /* intra-op threads the plugin recommends; MLH_UNKNOWN */
  int32_t score_hint;          /* plugin's preference, used by the host only to break ties */
  const char* features;        /* comma-separated ISA/device features, e.g. "avx2,fma" */
  const char* details_json;    /* a JSON object of further facts for reports; may be NULL */
} mlh_device_record;

/* One environment variable to set before LibTorch starts. Owned by the plugin. */
typedef struct mlh_env_var {
  uint32_t struct_size;
  const char* name;
  const char* value;
} mlh_env_var;

/* What the host asks prepare for. Valid only during the call. */
typedef struct mlh_prepare_request {
  uint32_t struct_size;
  int32_t device_index;  /* index of the chosen device in this plugin's probe */
  const char* plan_json; /* the execution plan as a JSON object (see docs/plan.md) */
} mlh_prepare_request;

/* Field bits of mlh_telemetry_sample.valid_fields. */
#define MLH_TELEMETRY_UTILIZATION 0x1u
#define MLH_TELEMETRY_MEMORY_USED 0x2u
#define MLH_TELEMETRY_MEMORY_TOTAL 0x4u
#define MLH_TELEMETRY_TEMPERATURE 0x8u
#define MLH_TELEMETRY_POWER 0x10u

/* A telemetry sample. The host owns it and sets struct_size; the plugin writes the fields
 * it knows (within struct_size) and sets their bits in valid_fields. */
typedef struct mlh_telemetry_sample {
  uint32_t struct_size;
  uint32_t valid_fields;      /* MLH_TELEMETRY_* bits of the fields that hold values */
  double utilization_percent; /* device utilization (CPU: of the watched process), 0..100*n */
  int64_t memory_used_bytes;  /* device memory in use (CPU: resident set of the process) */
  int64_t memory_total_bytes;
  double temperature_celsius;
  double power_watts;
} mlh_telemetry_sample;

/* The function table of a device plugin (ABI 1.0). Static lifetime. */
typedef struct mlh_device_plugin {
  uint32_t struct_size;
  /* Creates the plugin's state. Required. */
  mlh_status (*create)(mlh_plugin_instance** out_instance, mlh_error* error);
  /* Frees it. Required. */
  void (*destroy)(mlh_plugin_instance* instance);
  /* Lists devices. Required. *out_records points to *out_count records, owned by the
   * plugin, valid until the next probe or destroy. Zero devices is a success. Records are
   * records[0].struct_size bytes apart (all share one struct_size): a reader steps by that,
   * never by its own sizeof, and rejects a struct_size below the v1.0 size. */
  mlh_status (*probe)(mlh_plugin_instance* instance, const mlh_device_record** out_records,
                      uint32_t* out_count, mlh_error* error);
  /* Environment settings the plan needs before LibTorch starts. Optional (NULL: none).
   * *out_vars valid until the next prepare or destroy; like records, the variables are
   * out_vars[0].struct_size bytes apart. */
  mlh_status (*prepare)(mlh_plugin_instance* instance, const mlh_prepare_request* request,
                        const mlh_env_var** out_vars, uint32_t* out_count, mlh_error* error);
  /* Samples device `device_index` while process `pid` trains. Optional. */
  mlh_status (*telemetry)(mlh_plugin_instance* instance, int32_t device_index, int64_t pid,
                          mlh_telemetry_sample* sample, mlh_error* error);
} mlh_device_plugin;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MLH_DEVICE_H */
