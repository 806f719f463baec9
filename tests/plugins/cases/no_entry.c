/* no-entry: a valid shared library with a manifest that does not export the entry symbol
 * mlh_plugin_negotiate: its function is misspelled, as a real mistake would be (and so, like
 * everything but the entry symbol, kept local by mlh_add_plugin's export list). */
#include <mlh/mlh.h>

MLH_EXPORT mlh_status mlh_plugin_negociate(const mlh_negotiate_request* request,
                                           mlh_negotiate_response* response, mlh_error* error) {
  (void)request;
  (void)response;
  (void)error;
  return MLH_ERR_INTERNAL;
}
