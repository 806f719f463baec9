// throw-raw: a plugin written against the raw C ABI in C++, without the helper, that breaks
// the rule "every exported function catches everything inside": its probe is an extern "C"
// function that throws std::runtime_error("probe exploded") through the C boundary.
// Undefined behaviour by the ABI. In practice, with GCC/Clang on Linux, the exception unwinds
// into the caller: a caller frame that cannot propagate it (noexcept, or no handler at all)
// ends the process with std::terminate -> SIGABRT; a C++ caller that wraps the call in
// catch (...) catches it. The host must survive either way (it probes in a child process).
#include <mlh/mlh.h>

#include <stdexcept>

namespace {
int g_instance;
}

extern "C" {

static mlh_status throw_raw_create(mlh_plugin_instance** out, mlh_error*) {
  *out = reinterpret_cast<mlh_plugin_instance*>(&g_instance);
  return MLH_OK;
}

static void throw_raw_destroy(mlh_plugin_instance*) {}

// Deliberately not noexcept; C language linkage (hidden, like everything but the entry point).
mlh_status mlh_test_throw_raw_probe(mlh_plugin_instance*, const mlh_device_record**, uint32_t*,
                                    mlh_error*) {
  throw std::runtime_error("probe exploded");
}

static const mlh_device_plugin throw_raw_table = {sizeof(mlh_device_plugin), &throw_raw_create,
                                                  &throw_raw_destroy, &mlh_test_throw_raw_probe,
                                                  nullptr, nullptr};

MLH_EXPORT mlh_status mlh_plugin_negotiate(const mlh_negotiate_request* request,
                                           mlh_negotiate_response* response, mlh_error* error) {
  if (!MLH_HAS_FIELD(request, mlh_negotiate_request, version_count) ||
      !MLH_HAS_FIELD(response, mlh_negotiate_response, table)) {
    if (MLH_HAS_FIELD(error, mlh_error, message)) error->code = MLH_ERR_INVALID_ARGUMENT;
    return MLH_ERR_INVALID_ARGUMENT;
  }
  for (uint32_t i = 0; request->versions && i < request->version_count; ++i) {
    if (request->versions[i].major != MLH_ABI_VERSION_MAJOR) continue;
    response->abi_major = MLH_ABI_VERSION_MAJOR;
    response->abi_minor = 0;
    response->kind = MLH_PLUGIN_KIND_DEVICE;
    response->name = MLH_PLUGIN_NAME;
    response->version = MLH_PLUGIN_VERSION;
    response->table = &throw_raw_table;
    return MLH_OK;
  }
  if (MLH_HAS_FIELD(error, mlh_error, message)) error->code = MLH_ERR_VERSION;
  return MLH_ERR_VERSION;
}

}  // extern "C"
