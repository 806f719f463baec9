/* no-entry: a valid shared library with a manifest that does not export the entry symbol
 * mlh_plugin_negotiate. It exports a misspelled one instead, as a real mistake would. */
#include <mlh/mlh.h>

MLH_EXPORT mlh_status mlh_plugin_negociate(const mlh_negotiate_request* request,
                                           mlh_negotiate_response* response, mlh_error* error) {
  (void)request;
  (void)response;
  (void)error;
  return MLH_ERR_INTERNAL;
}
