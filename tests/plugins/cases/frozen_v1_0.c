/* abi-v1-0: a device plugin compiled against the frozen copy of the ABI 1.0 headers
 * (tests/abi/frozen/v1.0), as a third party built it when 1.0 was released. Every later
 * host must keep loading it, probing it and calling its prepare and telemetry: the CLI test
 * trains toyreg on its device. One CPU-class device, kind "abi-v1-0"; prepare sets
 * MLH_ABI_V1_0_PREPARED=1; telemetry reports 42% utilization. */
#include <stdlib.h>

#include "c_plugin_common.h"

#if MLH_ABI_VERSION_MAJOR != 1 || MLH_ABI_VERSION_MINOR != 0
#error "abi-v1-0 must be compiled against tests/abi/frozen/v1.0, not the current SDK headers"
#endif

struct mlh_plugin_instance {
  mlh_device_record record;
  mlh_env_var vars[1];
};

static mlh_status frozen_create(mlh_plugin_instance** out, mlh_error* error) {
  mlh_plugin_instance* self = (mlh_plugin_instance*)calloc(1, sizeof(*self));
  if (self == NULL) {
    c_set_error(error, MLH_ERR_OUT_OF_MEMORY, "out of memory");
    return MLH_ERR_OUT_OF_MEMORY;
  }
  self->record = c_cpu_record("abi-v1-0", "ABI 1.0 plugin cpu");
  *out = self;
  return MLH_OK;
}

static void frozen_destroy(mlh_plugin_instance* self) { free(self); }

static mlh_status frozen_probe(mlh_plugin_instance* self, const mlh_device_record** out, uint32_t* count,
                               mlh_error* error) {
  if (self == NULL || out == NULL || count == NULL) {
    c_set_error(error, MLH_ERR_INVALID_ARGUMENT, "probe: NULL argument");
    return MLH_ERR_INVALID_ARGUMENT;
  }
  *out = &self->record;
  *count = 1;
  return MLH_OK;
}

static mlh_status frozen_prepare(mlh_plugin_instance* self, const mlh_prepare_request* request,
                                 const mlh_env_var** out, uint32_t* count, mlh_error* error) {
  if (!MLH_HAS_FIELD(request, mlh_prepare_request, plan_json) || request->device_index != 0) {
    c_set_error(error, MLH_ERR_INVALID_ARGUMENT, "prepare: bad request or device index");
    return MLH_ERR_INVALID_ARGUMENT;
  }
  self->vars[0].struct_size = (uint32_t)sizeof(mlh_env_var);
  self->vars[0].name = "MLH_ABI_V1_0_PREPARED";
  self->vars[0].value = "1";
  *out = self->vars;
  *count = 1;
  return MLH_OK;
}

static mlh_status frozen_telemetry(mlh_plugin_instance* self, int32_t device_index, int64_t pid,
                                   mlh_telemetry_sample* sample, mlh_error* error) {
  (void)self;
  (void)pid;
  if (device_index != 0 || !MLH_HAS_FIELD(sample, mlh_telemetry_sample, utilization_percent)) {
    c_set_error(error, MLH_ERR_INVALID_ARGUMENT, "telemetry: bad device index or sample");
    return MLH_ERR_INVALID_ARGUMENT;
  }
  sample->valid_fields = MLH_TELEMETRY_UTILIZATION;
  sample->utilization_percent = 42.0;
  return MLH_OK;
}

static const mlh_device_plugin frozen_table = {
    sizeof(mlh_device_plugin), frozen_create, frozen_destroy, frozen_probe, frozen_prepare, frozen_telemetry};

MLH_EXPORT mlh_status mlh_plugin_negotiate(const mlh_negotiate_request* request,
                                           mlh_negotiate_response* response, mlh_error* error) {
  return c_negotiate(request, response, error, MLH_ABI_VERSION_MAJOR, MLH_PLUGIN_KIND_DEVICE, &frozen_table);
}
