/* abi-v1-0-algo: an algorithm plugin compiled against the frozen copy of the ABI 1.0 headers
 * (tests/abi/frozen/v1.0), as a third party built it when 1.0 was released: its table has no
 * describe_run (ABI 1.1). Every later host must keep describing, planning and running it:
 * its plan's values are shown as given ("the algorithm does not say..."). Its one command,
 * train, counts `steps` steps, reporting a metric each, and sends a summary. No LibTorch. */
#include <stdlib.h>

#include "c_plugin_common.h"

#if MLH_ABI_VERSION_MAJOR != 1 || MLH_ABI_VERSION_MINOR != 0
#error "abi-v1-0-algo must be compiled against tests/abi/frozen/v1.0, not the current SDK headers"
#endif

struct mlh_plugin_instance {
  mlh_algorithm_description description;
};

static const char* const kCommands[] = {"train"};

static mlh_status algo_create(mlh_plugin_instance** out, mlh_error* error) {
  mlh_plugin_instance* self = (mlh_plugin_instance*)calloc(1, sizeof(*self));
  if (self == NULL) {
    c_set_error(error, MLH_ERR_OUT_OF_MEMORY, "out of memory");
    return MLH_ERR_OUT_OF_MEMORY;
  }
  self->description.struct_size = (uint32_t)sizeof(mlh_algorithm_description);
  self->description.name = MLH_PLUGIN_NAME;
  self->description.version = MLH_PLUGIN_VERSION;
  self->description.summary = "counts steps (built against the ABI 1.0 headers)";
  self->description.commands = kCommands;
  self->description.command_count = 1;
  self->description.config_schema_json =
      "{\"type\": \"object\", \"additionalProperties\": false, "
      "\"properties\": {\"steps\": {\"type\": \"integer\", \"minimum\": 1}, \"batch_size\": {\"type\": \"integer\"}}}";
  self->description.config_defaults_json = "{\"steps\": 3, \"batch_size\": 8}";
  self->description.presets_json = "{}";
  *out = self;
  return MLH_OK;
}

static void algo_destroy(mlh_plugin_instance* self) { free(self); }

static mlh_status algo_describe(mlh_plugin_instance* self, const mlh_algorithm_description** out, mlh_error* error) {
  (void)error;
  *out = &self->description;
  return MLH_OK;
}

static mlh_status algo_run(mlh_plugin_instance* self, const mlh_run_context* ctx, mlh_error* error) {
  (void)self;
  if (!MLH_HAS_FIELD(ctx, mlh_run_context, host) || ctx->host == NULL) {
    c_set_error(error, MLH_ERR_INVALID_ARGUMENT, "run: no host callbacks");
    return MLH_ERR_INVALID_ARGUMENT;
  }
  for (int64_t step = 0; step < 3; ++step) ctx->host->metric(ctx->host->host_data, "train/loss", 1.0 / (double)(step + 1), step);
  ctx->host->summary(ctx->host->host_data, "{\"steps\": 3, \"abi\": \"1.0\"}");
  return MLH_OK;
}

static const mlh_algorithm_plugin algo_table = {sizeof(mlh_algorithm_plugin), algo_create, algo_destroy,
                                                algo_describe, algo_run};

MLH_EXPORT mlh_status mlh_plugin_negotiate(const mlh_negotiate_request* request,
                                           mlh_negotiate_response* response, mlh_error* error) {
  return c_negotiate(request, response, error, MLH_ABI_VERSION_MAJOR, MLH_PLUGIN_KIND_ALGORITHM, &algo_table);
}
