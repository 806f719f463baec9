/* cgood: a correct device plugin in pure C, against the raw C ABI (no C++ helper). One
 * CPU-class device named "c plugin cpu". prepare and telemetry are NULL: "nothing to
 * report", which the host must accept without calling them. */
#include <stdlib.h>

#include "c_plugin_common.h"

struct mlh_plugin_instance {
  mlh_device_record record;
};

static mlh_status cgood_create(mlh_plugin_instance** out, mlh_error* error) {
  mlh_plugin_instance* self = (mlh_plugin_instance*)calloc(1, sizeof(*self));
  if (self == NULL) {
    c_set_error(error, MLH_ERR_OUT_OF_MEMORY, "out of memory");
    return MLH_ERR_OUT_OF_MEMORY;
  }
  self->record = c_cpu_record("cgood", "c plugin cpu");
  *out = self;
  return MLH_OK;
}

static void cgood_destroy(mlh_plugin_instance* self) { free(self); }

static mlh_status cgood_probe(mlh_plugin_instance* self, const mlh_device_record** out, uint32_t* count,
                              mlh_error* error) {
  if (self == NULL || out == NULL || count == NULL) {
    c_set_error(error, MLH_ERR_INVALID_ARGUMENT, "probe: NULL argument");
    return MLH_ERR_INVALID_ARGUMENT;
  }
  *out = &self->record;
  *count = 1;
  return MLH_OK;
}

static const mlh_device_plugin cgood_table = {
    sizeof(mlh_device_plugin), cgood_create, cgood_destroy, cgood_probe, NULL, NULL};

MLH_EXPORT mlh_status mlh_plugin_negotiate(const mlh_negotiate_request* request,
                                           mlh_negotiate_response* response, mlh_error* error) {
  return c_negotiate(request, response, error, MLH_ABI_VERSION_MAJOR, MLH_PLUGIN_KIND_DEVICE, &cgood_table);
}
