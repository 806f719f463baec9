/*
 * mlhost plugin C ABI: algorithm plugins.
 *
 * An algorithm plugin trains and evaluates models (with LibTorch) on the device and plan
 * the host chose. It talks to the host only through the callbacks in mlh_host_callbacks.
 */
#ifndef MLH_ALGORITHM_H
#define MLH_ALGORITHM_H

#include "mlh_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What an algorithm plugin says about itself. Owned by the plugin, valid until destroy. */
typedef struct mlh_algorithm_description {
  uint32_t struct_size;
  const char* name;
  const char* version;
  const char* summary;              /* one line for listings */
  const char* const* commands;      /* e.g. {"train", "eval"}; the first is the default */
  uint32_t command_count;
  const char* config_schema_json;   /* JSON Schema (the subset in docs/config.md) */
  const char* config_defaults_json; /* JSON object: the default config */
  const char* presets_json;         /* JSON object: preset name -> partial config */
} mlh_algorithm_description;


/* Callbacks the host gives a run. Every function is non-NULL and may be called from any
 * thread of the plugin; strings passed in are copied before the call returns. */
typedef struct mlh_host_callbacks {
  uint32_t struct_size;
  void* host_data; /* pass back as the first argument */
  void (*log)(void* host_data, int32_t level, const char* message);
  /* A scalar metric at a training step (e.g. "train/loss"). */
  void (*metric)(void* host_data, const char* name, double value, int64_t step);
  /* Progress: `done` of `total` units (total <= 0: unknown). */
  void (*progress)(void* host_data, int64_t done, int64_t total, const char* unit);
  /* 1 when the host asks the run to stop (Ctrl-C, time limit): checkpoint and return
   * MLH_ERR_CANCELLED. */
  int32_t (*should_stop)(void* host_data);
  /* The final summary of the run as a JSON object (called at most once, at the end). */
  void (*summary)(void* host_data, const char* summary_json);
} mlh_host_callbacks;

/* Everything a run gets. Owned by the host, valid during the run call. */
typedef struct mlh_run_context {
  uint32_t struct_size;
  const char* command;       /* one of the description's commands */
  const char* config_json;   /* the merged, validated config (JSON object) */
  const char* device_json;   /* the chosen device record as JSON (see docs/probe-json.md) */
  const char* torch_device;  /* "cpu", "cuda:0", "mps" */
  const char* plan_json;     /* the execution plan (JSON object) */
  const char* run_dir;       /* existing directory for checkpoints and outputs */
  int32_t resume;            /* 1: continue from the newest checkpoint in run_dir */
  int32_t rank;              /* distributed rank (0 when not distributed) */
  int32_t world_size;        /* number of ranks (1 when not distributed) */
  int32_t local_rank;        /* rank on this machine */
  const mlh_host_callbacks* host;
} mlh_run_context;

/* The function table of an algorithm plugin (ABI 1.0; describe_run since 1.1). Static
 * lifetime. */
typedef struct mlh_algorithm_plugin {
  uint32_t struct_size;
  mlh_status (*create)(mlh_plugin_instance** out_instance, mlh_error* error);
  void (*destroy)(mlh_plugin_instance* instance);
  /* Required. *out valid until destroy. */
  mlh_status (*describe)(mlh_plugin_instance* instance, const mlh_algorithm_description** out,
                         mlh_error* error);
  /* Required. Runs one command to the end, or until should_stop. */
  mlh_status (*run)(mlh_plugin_instance* instance, const mlh_run_context* context,
                    mlh_error* error);
  /* ABI 1.1, optional (NULL: the host says nothing about the model and shows the plan's
   * values as given). What run() would do with this very context, without training: a JSON
   * object (docs/plugin-guide.md) with "model" (the size of the model the config and plan
   * give: "parameters", "shape") and "plan_fields" (for each plan field the algorithm reads,
   * what it does with it, or {"no_effect": "why"}). The host calls it while planning, before
   * a worker starts; the context's callbacks may be used for log messages only. *out_json
   * is owned by the plugin and valid until the next call on this instance or destroy. */
  mlh_status (*describe_run)(mlh_plugin_instance* instance, const mlh_run_context* context,
                             const char** out_json, mlh_error* error);
} mlh_algorithm_plugin;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MLH_ALGORITHM_H */
