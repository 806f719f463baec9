/* malformed-*: raw C device plugins whose probe succeeds (MLH_OK) but returns garbage the
 * host must reject without crashing. MLH_TEST_MALFORMED selects the variant:
 *   1 malformed-null-name: one record whose name is NULL (a required string);
 *   2 malformed-size:      one record whose struct_size is 8 (the rest is filled in and
 *                          plausible, so only a host that checks struct_size notices);
 *   3 malformed-count:     count 5 with the records pointer NULL;
 *   4 malformed-class:     two records: [0] device_class 42 (no such class), [1] a CPU
 *                          record whose torch_device is "cuda:x!" (not a device string).
 * Everything else about the plugin is correct. */
#include "c_plugin_common.h"

#ifndef MLH_TEST_MALFORMED
#error "define MLH_TEST_MALFORMED (1..4)"
#endif

static mlh_device_record g_records[2];

static mlh_status mf_create(mlh_plugin_instance** out, mlh_error* error) {
  (void)error;
  *out = (mlh_plugin_instance*)g_records;
  return MLH_OK;
}

static void mf_destroy(mlh_plugin_instance* self) { (void)self; }

static mlh_status mf_probe(mlh_plugin_instance* self, const mlh_device_record** out, uint32_t* count,
                           mlh_error* error) {
  (void)self;
  (void)error;
  g_records[0] = c_cpu_record("malformed", "malformed device 0");
  g_records[1] = c_cpu_record("malformed", "malformed device 1");
  g_records[1].index = 1;
#if MLH_TEST_MALFORMED == 1
  g_records[0].name = NULL;
  *out = g_records;
  *count = 1;
#elif MLH_TEST_MALFORMED == 2
  g_records[0].struct_size = 8;
  *out = g_records;
  *count = 1;
#elif MLH_TEST_MALFORMED == 3
  *out = NULL;
  *count = 5;
#elif MLH_TEST_MALFORMED == 4
  g_records[0].device_class = 42;
  g_records[1].torch_device = "cuda:x!";
  *out = g_records;
  *count = 2;
#else
#error "MLH_TEST_MALFORMED must be 1..4"
#endif
  return MLH_OK;
}

static const mlh_device_plugin mf_table = {sizeof(mlh_device_plugin), mf_create, mf_destroy, mf_probe, NULL, NULL};

MLH_EXPORT mlh_status mlh_plugin_negotiate(const mlh_negotiate_request* request,
                                           mlh_negotiate_response* response, mlh_error* error) {
  return c_negotiate(request, response, error, MLH_ABI_VERSION_MAJOR, MLH_PLUGIN_KIND_DEVICE, &mf_table);
}
