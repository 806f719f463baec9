// What the host says about a worker killed outright (SIGKILL): memory is named as the likely
// cause when the cgroup's OOM-kill count went up or the worker's last resident memory was near
// the machine's, with the command that resumes the run with half the batch; otherwise nothing.
#include <gtest/gtest.h>

#include "run/memory_kill.hpp"
#include "test_files.hpp"

namespace mlhost {
namespace {

using nlohmann::json;
using testing::write_text;

constexpr int64_t kGiB = int64_t{1} << 30;
const std::string kResume = "host --algorithm toyreg --run-dir runs/x --resume";

json plan_with(int64_t batch) { return {{"memory_total_bytes", 16 * kGiB}, {"batch_size", batch}}; }

TEST(MemoryKill, ReadsTheOomKillCountOfAMemoryEventsFile) {
  TempDir dir;
  write_text(dir / "memory.events", "low 0\nhigh 0\nmax 3\noom 2\noom_kill 2\noom_group_kill 0\n");
  EXPECT_EQ(oom_kill_count(dir / "memory.events"), 2);
  write_text(dir / "other", "low 0\n");
  EXPECT_EQ(oom_kill_count(dir / "other"), std::nullopt);
  EXPECT_EQ(oom_kill_count(dir / "missing"), std::nullopt);
  EXPECT_EQ(oom_kill_count(""), std::nullopt);
}

TEST(MemoryKill, AnOomKillInTheCgroupIsNamedWithTheResumeCommand) {
  TempDir dir;
  write_text(dir / "telemetry.jsonl", R"({"t": 1, "memory_used_bytes": 1073741824})" "\n");
  const auto why = memory_kill_explanation(0, 1, dir / "telemetry.jsonl", plan_with(256), kResume, "toyreg", true);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("likely out of memory: the kernel's OOM killer"), std::string::npos) << *why;
  EXPECT_NE(why->find("oom_kill 0 -> 1"), std::string::npos) << *why;
  EXPECT_NE(why->find("1.0 GiB of 16.0 GiB"), std::string::npos) << *why;
  EXPECT_NE(why->find(kResume + " --batch-size 128"), std::string::npos) << *why;
}

TEST(MemoryKill, ResidentMemoryNearTheMachinesIsNamedWithoutACgroup) {
  TempDir dir;
  // The last sample counts: 15 GiB of 16.
  write_text(dir / "telemetry.jsonl", R"({"memory_used_bytes": 1073741824})" "\n" R"({"memory_used_bytes": 16106127360})" "\n"
                                      "not json\n");
  const auto why = memory_kill_explanation(std::nullopt, std::nullopt, dir / "telemetry.jsonl", plan_with(1), kResume, "toyreg", true);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("resident memory was 15.0 GiB of 16.0 GiB"), std::string::npos) << *why;
  EXPECT_NE(why->find("--batch-size N"), std::string::npos) << "a batch of 1 cannot halve: " << *why;
}

// protonet and ppo refuse --batch-size: the advice names their config instead.
TEST(MemoryKill, AnAlgorithmWithoutABatchSizeIsToldToShrinkItsConfig) {
  TempDir dir;
  write_text(dir / "telemetry.jsonl", R"({"memory_used_bytes": 1073741824})" "\n");
  const auto why = memory_kill_explanation(0, 1, dir / "telemetry.jsonl", plan_with(64), kResume, "protonet", false);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->find("--batch-size"), std::string::npos) << *why;
  EXPECT_NE(why->find(kResume + " with smaller sizes in protonet's config"), std::string::npos) << *why;
  EXPECT_NE(why->find("'host --describe protonet'"), std::string::npos) << *why;
}

TEST(MemoryKill, OtherKillsAreNotBlamedOnMemory) {
  TempDir dir;
  write_text(dir / "telemetry.jsonl", R"({"memory_used_bytes": 1073741824})" "\n");
  EXPECT_EQ(memory_kill_explanation(3, 3, dir / "telemetry.jsonl", plan_with(64), kResume, "toyreg", true), std::nullopt);
  EXPECT_EQ(memory_kill_explanation(std::nullopt, std::nullopt, dir / "missing.jsonl", plan_with(64), kResume, "toyreg", true), std::nullopt);
  EXPECT_EQ(memory_kill_explanation(std::nullopt, std::nullopt, dir / "telemetry.jsonl", json::object(), kResume, "toyreg", true), std::nullopt);
}

}  // namespace
}  // namespace mlhost
