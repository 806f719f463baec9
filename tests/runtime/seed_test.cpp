#include <gtest/gtest.h>

#include <mlh/plugin.hpp>
#include <mlh/runtime/seed.hpp>

namespace {

using namespace mlh::rt;

TEST(Seed, SameSeedSameStreams) {
  seed_everything(42);
  const at::Tensor a = at::rand({16});
  const uint64_t h = host_rng()();
  seed_everything(42);
  EXPECT_TRUE(at::equal(a, at::rand({16})));
  EXPECT_EQ(host_rng()(), h);
  seed_everything(43);
  EXPECT_FALSE(at::equal(a, at::rand({16})));
}

TEST(Seed, RestoreContinuesTheSameStreams) {
  seed_everything(1);
  at::rand({5});
  const RngState saved = capture_rng_state();
  const at::Tensor next = at::randn({32});
  const uint64_t next_host = host_rng()();

  at::randn({100});  // move on, as training would
  host_rng()();
  restore_rng_state(saved);
  EXPECT_TRUE(at::equal(at::randn({32}), next));
  EXPECT_EQ(host_rng()(), next_host);
}

TEST(Seed, StateRoundTripsThroughTensors) {
  seed_everything(3);
  const std::map<std::string, at::Tensor> tensors = capture_rng_state().to_tensors();
  ASSERT_TRUE(tensors.count("rng.cpu"));
  ASSERT_TRUE(tensors.count("rng.host"));
  for (const auto& [key, t] : tensors) EXPECT_EQ(t.scalar_type(), at::kByte) << key;
  const at::Tensor expected = at::rand({8});
  const uint64_t expected_host = host_rng()();

  // Clones stand for tensors read back from a checkpoint file.
  std::map<std::string, at::Tensor> loaded;
  for (const auto& [key, t] : tensors) loaded[key] = t.clone();
  seed_everything(99);
  restore_rng_state(RngState::from_tensors(loaded));
  EXPECT_TRUE(at::equal(at::rand({8}), expected));
  EXPECT_EQ(host_rng()(), expected_host);
}

TEST(Seed, MalformedStateIsAnErrorNamingTheKey) {
  std::map<std::string, at::Tensor> tensors = capture_rng_state().to_tensors();
  tensors.erase("rng.cpu");
  try {
    RngState::from_tensors(tensors);
    FAIL() << "no error";
  } catch (const mlh::Error& e) {
    EXPECT_NE(std::string(e.what()).find("rng.cpu"), std::string::npos) << e.what();
  }
  RngState bad = capture_rng_state();
  bad.host = "not a generator";
  EXPECT_THROW(restore_rng_state(bad), mlh::Error);
}

}  // namespace
