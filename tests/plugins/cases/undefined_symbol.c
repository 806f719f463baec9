/* undefined-symbol: a plugin whose code calls a function that no library defines, as a plugin
 * built against a newer version of a library it links would. The dynamic loader refuses it
 * (the host loads with RTLD_NOW), naming the symbol. Its link allows the undefined symbol on
 * purpose (tests/plugins/CMakeLists.txt: -z undefs after mlh_add_plugin's --no-undefined). */
#include <mlh/mlh.h>

extern int mlh_test_function_no_library_defines(void);

MLH_EXPORT mlh_status mlh_plugin_negotiate(const mlh_negotiate_request* request,
                                           mlh_negotiate_response* response, mlh_error* error) {
  (void)request;
  (void)response;
  (void)error;
  return mlh_test_function_no_library_defines() ? MLH_OK : MLH_ERR_INTERNAL;
}
