// prepare: the CPU fallback and the allocator limit from memory_fraction, and errors that
// name the bad field (the CPU side's threads: tests/abi/thread_env_test.cpp).
#include <gtest/gtest.h>

#include <map>

#include "mps_prepare.hpp"

namespace {

using Env = std::map<std::string, std::string>;

Env env_of(const std::string& plan) {
  Env env;
  for (const mlh::EnvVar& v : mlh::mps::mps_environment(plan)) {
    EXPECT_EQ(env.count(v.name), 0u) << "set twice: " << v.name;
    env[v.name] = v.value;
  }
  return env;
}

std::pair<mlh_status, std::string> error_of(const std::string& plan) {
  try {
    mlh::mps::mps_environment(plan);
  } catch (const mlh::Error& e) {
    return {e.code(), e.what()};
  }
  ADD_FAILURE() << "no error for " << plan;
  return {MLH_OK, ""};
}

TEST(MpsPrepare, FallbackAlwaysAndNothingElseByDefault) {
  for (const char* plan : {"{}", R"({"memory_fraction": null, "threads": null})", R"({"threads": {}})",
                           R"({"threads": {"intra_op": null, "inter_op": 1}})", R"({"precision": "fp32"})"})
    EXPECT_EQ(env_of(plan), (Env{{"PYTORCH_ENABLE_MPS_FALLBACK", "1"}})) << plan;
}

TEST(MpsPrepare, EverythingFromOnePlan) {
  Env expected{{"PYTORCH_ENABLE_MPS_FALLBACK", "1"},
               {"PYTORCH_MPS_HIGH_WATERMARK_RATIO", "0.8"},
               {"PYTORCH_MPS_LOW_WATERMARK_RATIO", "0.8"}};
  EXPECT_EQ(env_of(R"({"device": "mps:0", "memory_fraction": 0.8, "threads": {"intra_op": 8, "inter_op": 1}})"),
            expected);
}

TEST(MpsPrepare, MemoryFractionWithAtMostThreeDecimals) {
  struct Case {
    const char* fraction;
    const char* ratio;
  };
  for (const Case& c : {Case{"1", "1"}, Case{"1.0", "1"}, Case{"0.5", "0.5"}, Case{"0.75", "0.75"},
                        Case{"0.123", "0.123"}, Case{"0.1234", "0.123"}, Case{"0.1236", "0.124"},
                        Case{"0.9999", "1"}, Case{"0.0006", "0.001"}, Case{"1e-9", "0.001"},
                        Case{"0.07", "0.07"}}) {
    Env env = env_of(std::string(R"({"memory_fraction": )") + c.fraction + "}");
    EXPECT_EQ(env["PYTORCH_MPS_HIGH_WATERMARK_RATIO"], c.ratio) << c.fraction;
    // The low watermark must never be above the high one, or PyTorch refuses to start.
    EXPECT_EQ(env["PYTORCH_MPS_LOW_WATERMARK_RATIO"], c.ratio) << c.fraction;
  }
}

TEST(MpsPrepare, BadValuesNameTheField) {
  struct Case {
    const char* plan;
    const char* message;
  };
  for (const Case& c : {
           Case{R"({"memory_fraction": 0})", "plan field 'memory_fraction': expected a number in (0, 1], got 0"},
           Case{R"({"memory_fraction": -0.5})", "plan field 'memory_fraction': expected a number in (0, 1], got -0.5"},
           Case{R"({"memory_fraction": 1.5})", "plan field 'memory_fraction': expected a number in (0, 1], got 1.5"},
           Case{R"({"memory_fraction": "0.8"})",
                "plan field 'memory_fraction': expected a number in (0, 1], got \"0.8\""},
           Case{R"({"memory_fraction": true})", "plan field 'memory_fraction': expected a number in (0, 1], got true"},
       }) {
    auto [code, message] = error_of(c.plan);
    EXPECT_EQ(code, MLH_ERR_INVALID_ARGUMENT) << c.plan;
    EXPECT_EQ(message, c.message) << c.plan;
  }
}

TEST(MpsPrepare, ThePlanMustBeAJsonObject) {
  EXPECT_EQ(error_of("[1, 2]"), std::make_pair(MLH_ERR_INVALID_ARGUMENT, std::string("plan: expected a JSON object, got [1,2]")));
  EXPECT_EQ(error_of("{nope"), std::make_pair(MLH_ERR_INVALID_ARGUMENT, std::string("plan: not valid JSON: \"{nope\"")));
  auto [code, message] = error_of(std::string(200, '{'));
  EXPECT_EQ(code, MLH_ERR_INVALID_ARGUMENT);
  EXPECT_LE(message.size(), 100u) << "a long plan is cut in the message";
}

}  // namespace
