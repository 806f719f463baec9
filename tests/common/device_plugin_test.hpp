// A device plugin library loaded the way the host loads it (dlopen, negotiate ABI 1.0,
// create an instance), as the base of each device plugin's library tests.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <mlh/mlh.h>

#include <string>

namespace mlh::testing {

class DevicePluginTest : public ::testing::Test {
 protected:
  static mlh_error make_error() {
    mlh_error error{};
    error.struct_size = sizeof(error);
    return error;
  }

  // Call from the suite's SetUpTestSuite / TearDownTestSuite.
  static void load_library(const char* path) {
    handle_ = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << ::dlerror();
    negotiate_ = reinterpret_cast<mlh_negotiate_fn>(::dlsym(handle_, MLH_ENTRY_SYMBOL));
    ASSERT_NE(negotiate_, nullptr);
  }
  static void unload_library() {
    if (handle_) ::dlclose(handle_);
    handle_ = nullptr;
    negotiate_ = nullptr;
  }

  // The host's request for ABI `major`.0.
  static mlh_status negotiate(uint32_t major, mlh_negotiate_response* response, mlh_error* error) {
    mlh_abi_version version{sizeof(mlh_abi_version), major, 0};
    mlh_negotiate_request request{sizeof(request), &version, 1, MLH_PLUGIN_KIND_DEVICE, "mlhost-test", "0.1.0"};
    *response = mlh_negotiate_response{};
    response->struct_size = sizeof(*response);
    return negotiate_(&request, response, error);
  }

  // Negotiation answers ABI 1.0 as the device plugin `name` `version`, with a full v1.0
  // table, and refuses ABI 2.
  void expect_identity(const char* name, const char* version) {
    mlh_negotiate_response response;
    mlh_error error = make_error();
    ASSERT_EQ(negotiate(1, &response, &error), MLH_OK);
    EXPECT_EQ(response.abi_major, 1u);
    EXPECT_EQ(response.abi_minor, 0u);
    EXPECT_EQ(response.kind, MLH_PLUGIN_KIND_DEVICE);
    EXPECT_STREQ(response.name, name);
    EXPECT_STREQ(response.version, version);
    EXPECT_GE(table_->struct_size, sizeof(mlh_device_plugin));
    EXPECT_NE(table_->prepare, nullptr);
    EXPECT_NE(table_->telemetry, nullptr);
    error = make_error();
    EXPECT_EQ(negotiate(2, &response, &error), MLH_ERR_VERSION);
    EXPECT_GT(std::string(error.message).size(), 0u) << "a refusal says why";
  }

  void SetUp() override {
    if (!negotiate_) GTEST_SKIP() << "library did not load";
    mlh_negotiate_response response;
    mlh_error error = make_error();
    ASSERT_EQ(negotiate(1, &response, &error), MLH_OK) << error.message;
    table_ = static_cast<const mlh_device_plugin*>(response.table);
    ASSERT_NE(table_, nullptr);
    ASSERT_EQ(table_->create(&instance_, &error), MLH_OK) << error.message;
  }
  void TearDown() override {
    if (instance_) table_->destroy(instance_);
  }

  static inline void* handle_ = nullptr;
  static inline mlh_negotiate_fn negotiate_ = nullptr;
  const mlh_device_plugin* table_ = nullptr;
  mlh_plugin_instance* instance_ = nullptr;
};

}  // namespace mlh::testing
