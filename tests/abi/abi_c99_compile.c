/* The ABI headers compile as strict C99 too (-std=c99 -Wall -Wextra -Werror -pedantic):
 * a plugin author may use an older C compiler. Uses the types the way a C plugin does. */
#include <mlh/mlh.h>

#include "abi_layout.h"

static mlh_status c99_create(mlh_plugin_instance** out, mlh_error* error) {
  (void)error;
  *out = NULL;
  return MLH_OK;
}

static void c99_destroy(mlh_plugin_instance* instance) { (void)instance; }

static mlh_status c99_probe(mlh_plugin_instance* instance, const mlh_device_record** out,
                            uint32_t* count, mlh_error* error) {
  static mlh_device_record record = {
      .struct_size = sizeof(mlh_device_record), .device_class = MLH_DEVICE_CLASS_CPU, .available = 1};
  (void)instance;
  (void)error;
  record.kind = "cpu";
  record.name = "c99";
  record.torch_device = "cpu";
  *out = &record;
  *count = 1;
  return MLH_OK;
}

static const mlh_device_plugin c99_table = {
    .struct_size = sizeof(mlh_device_plugin),
    .create = c99_create,
    .destroy = c99_destroy,
    .probe = c99_probe,
    .prepare = NULL,
    .telemetry = NULL,
};

/* Returns 1 when the table and MLH_HAS_FIELD behave as a C99 plugin expects. */
int mlh_abi_c99_smoke(void) {
  const mlh_device_record* records = NULL;
  uint32_t count = 0;
  mlh_plugin_instance* instance = NULL;
  mlh_error error = {.struct_size = sizeof(mlh_error), .code = MLH_OK};
  if (c99_table.create(&instance, &error) != MLH_OK) return 0;
  if (c99_table.probe(instance, &records, &count, &error) != MLH_OK) return 0;
  c99_table.destroy(instance);
  return count == 1 && MLH_HAS_FIELD(&records[0], mlh_device_record, details_json) &&
         MLH_HAS_FIELD(&error, mlh_error, message) && c99_table.prepare == NULL;
}
