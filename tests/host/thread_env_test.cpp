// host/plan/thread_env.hpp: the plan's CPU-thread settings as the environment every device
// plugin's prepare returns (cpu with its recommended thread count, cuda and mps without).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>

#include "plan/thread_env.hpp"
#include "plan/worker_env.hpp"
// The SDK's deprecated shims of the same names, in the same program: they compile beside the
// host's only while the host keeps its own in its namespace (two definitions of one name with
// other bodies would be a one-definition violation).
#include <mlh/allocator_env.hpp>
#include <mlh/thread_env.hpp>
#include <mlh/worker_env.hpp>

namespace {

std::map<std::string, std::string> env_of(const std::string& plan, std::optional<int> default_intra_op) {
  std::map<std::string, std::string> env;
  for (const mlh::EnvVar& v : mlhost::thread_environment(mlhost::read_thread_plan(mlh::PlanReader(plan), default_intra_op)))
    env[v.name] = v.value;
  return env;
}

// The error prepare throws for `plan`, as code and message.
std::pair<mlh_status, std::string> error_of(const std::string& plan) {
  try {
    mlhost::read_thread_plan(mlh::PlanReader(plan), 4);
  } catch (const mlh::Error& e) {
    return {e.code(), e.what()};
  }
  ADD_FAILURE() << "no error for " << plan;
  return {MLH_OK, ""};
}

TEST(ThreadEnvironment, ThreadsFromThePlan) {
  std::map<std::string, std::string> expected{{"OMP_NUM_THREADS", "6"},
                                              {"MKL_NUM_THREADS", "6"},
                                              {"OPENBLAS_NUM_THREADS", "6"},
                                              {"MLH_INTEROP_THREADS", "2"}};
  EXPECT_EQ(env_of(R"({"threads": {"intra_op": 6, "inter_op": 2}, "precision": "bf16"})", 4), expected);
}

TEST(ThreadEnvironment, MissingThreadsTakeTheRecommendedCountAndOneInterOp) {
  for (const char* plan : {"{}", R"({"threads": null})", R"({"threads": {}})", R"({"threads": {"intra_op": null}})"}) {
    std::map<std::string, std::string> env = env_of(plan, 12);
    EXPECT_EQ(env["OMP_NUM_THREADS"], "12") << plan;
    EXPECT_EQ(env["MKL_NUM_THREADS"], "12") << plan;
    EXPECT_EQ(env["OPENBLAS_NUM_THREADS"], "12") << plan;
    EXPECT_EQ(env["MLH_INTEROP_THREADS"], "1") << plan;
  }
  EXPECT_EQ(env_of(R"({"threads": {"inter_op": 3}})", 12)["OMP_NUM_THREADS"], "12");
}

TEST(ThreadEnvironment, WithoutADefaultOnlyThePlanSetsThreadCounts) {
  // A GPU plugin has no recommendation of its own: the plan's count, or none at all.
  std::map<std::string, std::string> env = env_of("{}", std::nullopt);
  EXPECT_TRUE(env.empty());
  env = env_of(R"({"threads": {"intra_op": 3}, "omp_proc_bind": "spread", "omp_wait_policy": "active"})", std::nullopt);
  EXPECT_EQ(env["OMP_NUM_THREADS"], "3");
  EXPECT_EQ(env["OPENBLAS_NUM_THREADS"], "3");
  EXPECT_EQ(env["OMP_PROC_BIND"], "spread");
  EXPECT_EQ(env["OMP_WAIT_POLICY"], "active");
}

TEST(ThreadEnvironment, BadThreadCountsNameTheField) {
  struct Case {
    const char* plan;
    const char* message;
  };
  for (const Case& c : {
           Case{R"({"threads": {"intra_op": 0}})", "plan field 'threads.intra_op': expected a positive integer, got 0"},
           Case{R"({"threads": {"intra_op": -2}})", "plan field 'threads.intra_op': expected a positive integer, got -2"},
           Case{R"({"threads": {"intra_op": "4"}})",
                "plan field 'threads.intra_op': expected a positive integer, got \"4\""},
           Case{R"({"threads": {"intra_op": 2.5}})", "plan field 'threads.intra_op': expected a positive integer, got 2.5"},
           Case{R"({"threads": {"intra_op": 4294967297}})",
                "plan field 'threads.intra_op': expected a positive integer, got 4294967297"},
           Case{R"({"threads": {"intra_op": 2, "inter_op": true}})",
                "plan field 'threads.inter_op': expected a positive integer, got true"},
           Case{R"({"threads": 8})", "plan field 'threads': expected an object, got 8"},
       }) {
    auto [code, message] = error_of(c.plan);
    EXPECT_EQ(code, MLH_ERR_INVALID_ARGUMENT) << c.plan;
    EXPECT_EQ(message, c.message);
  }
}

TEST(ThreadEnvironment, PlanMustBeAJsonObject) {
  for (const char* plan : {"[1, 2]", "\"threads\"", "null", "{not json", ""}) {
    auto [code, message] = error_of(plan);
    EXPECT_EQ(code, MLH_ERR_INVALID_ARGUMENT) << plan;
    EXPECT_EQ(message.rfind("plan: ", 0), 0u) << message;
  }
}

}  // namespace

TEST(ThreadEnvironment, OpenMpBindingAndWaitPolicyFromThePlan) {
  std::map<std::string, std::string> env =
      env_of(R"({"omp_proc_bind": "close", "omp_wait_policy": "passive", "threads": {"intra_op": 2}})", 4);
  EXPECT_EQ(env["OMP_PROC_BIND"], "close");
  EXPECT_EQ(env["OMP_WAIT_POLICY"], "passive");
  env = env_of(R"({"omp_proc_bind": null, "omp_wait_policy": null})", 4);
  EXPECT_EQ(env.count("OMP_PROC_BIND"), 0u) << "null leaves it to the OpenMP runtime";
  EXPECT_EQ(env.count("OMP_WAIT_POLICY"), 0u);
  EXPECT_EQ(error_of(R"({"omp_proc_bind": "tight"})").second,
            "plan field 'omp_proc_bind': expected one of false, true, close, spread, master or null, got \"tight\"");
  EXPECT_EQ(error_of(R"({"omp_wait_policy": 3})").second,
            "plan field 'omp_wait_policy': expected one of active, passive or null, got 3");
}
