// prepare's reading of the plan: the CUDA allocator settings and bad values (threads: tests/abi/thread_env_test.cpp).
#include "cuda_prepare.hpp"

#include <gtest/gtest.h>

namespace {

using namespace mlh::cuda;

std::string config_of(const std::string& plan) { return allocator_config(read_cuda_plan(plan)); }

std::pair<mlh_status, std::string> error_of(const std::string& plan) {
  try {
    read_cuda_plan(plan);
  } catch (const mlh::Error& e) {
    return {e.code(), e.what()};
  }
  ADD_FAILURE() << "no error for " << plan;
  return {MLH_OK, ""};
}

TEST(CudaPlan, AllocatorConfigHoldsOnlyTheFieldsGiven) {
  EXPECT_EQ(config_of(R"({"memory": {"expandable_segments": true, "max_split_size_mb": 512,
                                      "garbage_collection_threshold": 0.8}})"),
            "expandable_segments:True,max_split_size_mb:512,garbage_collection_threshold:0.8");
  EXPECT_EQ(config_of(R"({"memory": {"expandable_segments": false}})"), "expandable_segments:False");
  EXPECT_EQ(config_of(R"({"memory": {"max_split_size_mb": 21}})"), "max_split_size_mb:21");
  EXPECT_EQ(config_of(R"({"memory": {"garbage_collection_threshold": 0.125}})"), "garbage_collection_threshold:0.125");
  EXPECT_EQ(config_of(R"({"memory": {"garbage_collection_threshold": 0.6, "fraction": 0.5}})"),
            "garbage_collection_threshold:0.6");
}

TEST(CudaPlan, NoMemoryFieldsNoAllocatorConfig) {
  for (const char* plan : {"{}", R"({"memory": null})", R"({"memory": {}})",
                           R"({"memory": {"expandable_segments": null, "max_split_size_mb": null}})"})
    EXPECT_EQ(config_of(plan), "") << plan;
}

TEST(CudaPlan, Environment) {
  CudaPlan plan = read_cuda_plan(R"({"memory": {"max_split_size_mb": 128}, "threads": {"intra_op": 8}})");
  std::vector<mlh::EnvVar> env = cuda_environment("GPU-abc", plan);
  ASSERT_EQ(env.size(), 3u) << "threads are the host's (host/plan/worker_env.hpp), as on every device";
  EXPECT_EQ(env[0].name, "CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(env[0].value, "GPU-abc");
  EXPECT_EQ(env[1].name, "MLH_TORCH_DEVICE");
  EXPECT_EQ(env[1].value, "cuda:0");
  EXPECT_EQ(env[2].name, "PYTORCH_CUDA_ALLOC_CONF");
  EXPECT_EQ(env[2].value, "max_split_size_mb:128");
  EXPECT_EQ(cuda_environment("GPU-abc", read_cuda_plan(R"({"threads": {"inter_op": 2}})")).size(), 2u);
}

TEST(CudaPlan, BadValuesNameTheField) {
  struct Case {
    const char* plan;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"memory": {"expandable_segments": 1}})",
            "plan field 'memory.expandable_segments': expected true or false, got 1"},
           {R"({"memory": {"max_split_size_mb": 20}})",
            "plan field 'memory.max_split_size_mb': expected an integer above 20 (MiB), got 20"},
           {R"({"memory": {"max_split_size_mb": 512.0}})",
            "plan field 'memory.max_split_size_mb': expected an integer above 20 (MiB), got 512.0"},
           {R"({"memory": {"max_split_size_mb": "512"}})",
            "plan field 'memory.max_split_size_mb': expected an integer above 20 (MiB), got \"512\""},
           {R"({"memory": {"max_split_size_mb": 18446744073709551615}})",
            "plan field 'memory.max_split_size_mb': expected an integer above 20 (MiB), got 18446744073709551615"},
           {R"({"memory": {"garbage_collection_threshold": 0}})",
            "plan field 'memory.garbage_collection_threshold': expected a number between 0 and 1 (exclusive), got 0"},
           {R"({"memory": {"garbage_collection_threshold": 1}})",
            "plan field 'memory.garbage_collection_threshold': expected a number between 0 and 1 (exclusive), got 1"},
           {R"({"memory": {"garbage_collection_threshold": "0.5"}})",
            "plan field 'memory.garbage_collection_threshold': expected a number between 0 and 1 (exclusive), got "
            "\"0.5\""},
           {R"({"memory": []})", "plan field 'memory': expected an object, got []"},
           {R"("fp16")", "plan: expected a JSON object, got \"fp16\""},
           {"{", "plan: not valid JSON: \"{\""}}) {
    auto [code, message] = error_of(c.plan);
    EXPECT_EQ(code, MLH_ERR_INVALID_ARGUMENT) << c.plan;
    EXPECT_EQ(message, c.message);
  }
}

}  // namespace
