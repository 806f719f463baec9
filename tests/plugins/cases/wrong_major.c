/* wrong-major (default) and wrong-major-refuse (MLH_TEST_REFUSE): raw C plugins "built
 * against a future ABI 2.0 header".
 *  - wrong-major answers negotiate with MLH_OK but abi_major 2, and a device table that
 *    works: a host that does not check the answer's major lists its device ("wrong major
 *    device") and so fails the test.
 *  - wrong-major-refuse refuses the host's 1.x offer: MLH_ERR_VERSION, "plugin needs ABI 2.x". */
#include "c_plugin_common.h"

#ifndef MLH_TEST_REFUSE

static mlh_device_record g_record;

static mlh_status wm_create(mlh_plugin_instance** out, mlh_error* error) {
  (void)error;
  *out = (mlh_plugin_instance*)&g_record;
  return MLH_OK;
}

static void wm_destroy(mlh_plugin_instance* self) { (void)self; }

static mlh_status wm_probe(mlh_plugin_instance* self, const mlh_device_record** out, uint32_t* count,
                           mlh_error* error) {
  (void)self;
  (void)error;
  g_record = c_cpu_record("wrongmajor", "wrong major device");
  *out = &g_record;
  *count = 1;
  return MLH_OK;
}

static const mlh_device_plugin wm_table = {sizeof(mlh_device_plugin), wm_create, wm_destroy, wm_probe, NULL, NULL};

MLH_EXPORT mlh_status mlh_plugin_negotiate(const mlh_negotiate_request* request,
                                           mlh_negotiate_response* response, mlh_error* error) {
  return c_negotiate(request, response, error, 2u, MLH_PLUGIN_KIND_DEVICE, &wm_table);
}

#else /* MLH_TEST_REFUSE */

MLH_EXPORT mlh_status mlh_plugin_negotiate(const mlh_negotiate_request* request,
                                           mlh_negotiate_response* response, mlh_error* error) {
  (void)request;
  (void)response;
  c_set_error(error, MLH_ERR_VERSION, "plugin needs ABI 2.x");
  return MLH_ERR_VERSION;
}

#endif
