// Broken device plugins (tests/plugins): each is reported with a reason, none takes the
// host down, the real CPU is still chosen, and probes run in parallel with a timeout.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "cli_harness.hpp"

namespace mlhost::cli_test {
namespace {

constexpr int kTimeoutMs = 1500;

struct FaultCase {
  const char* folder;
  std::vector<std::string> reason;  // the plugin's reason must contain one of these
};

void PrintTo(const FaultCase& c, std::ostream* os) { *os << c.folder; }

const std::vector<FaultCase>& fault_cases() {
  static const std::vector<FaultCase> cases = {
      {"crash", {"signal 11"}},
      {"abort", {"aborted", "signal 6"}},
      {"hang", {"did not answer"}},
      {"throw-helper", {"probe exploded"}},
      // Either the probe child dies in std::terminate (SIGABRT), or the host's catch (...)
      // around the call takes the exception (tests/plugins/README.md allows both).
      {"throw-raw", {"signal 6", "terminate", "exception across the C ABI"}},
      {"wrong-major", {"ABI"}},
      {"wrong-major-refuse", {"ABI"}},
      {"no-entry", {"entry symbol"}},
      {"not-elf", {"no ELF header"}},
      {"undefined-symbol", {"undefined symbol: mlh_test_function_no_library_defines"}},
      {"wrong-arch", {"architecture", "built for"}},
      {"name-mismatch", {"disagree"}},
      {"malformed-null-name", {"malformed"}},
      {"malformed-size", {"malformed"}},
      {"malformed-count", {"malformed"}},
      {"malformed-class", {"malformed"}},
      {"wrong-kind", {"disagree"}},
  };
  return cases;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "\"" : " or \"") + s + "\"";
  return out;
}

// The broken plugin's entry is failed or refused with the expected reason, and nothing it
// returned made it into the device list.
void expect_reported(const json& report, const FaultCase& c) {
  SCOPED_TRACE(std::string("case ") + c.folder);
  const json* p = find_plugin_by_dir(report, case_dir(c.folder));
  ASSERT_NE(p, nullptr) << "no plugin entry with a library in " << case_dir(c.folder) << "; plugins: "
                        << report["plugins"].dump(2);
  const std::string status = str((*p)["status"]);
  EXPECT_TRUE(status == "failed" || status == "refused") << p->dump(2);
  EXPECT_TRUE(contains_any(str((*p)["reason"]), c.reason))
      << "reason should contain " << joined(c.reason) << ": " << p->dump(2);
  EXPECT_TRUE((*p)["devices"].empty()) << p->dump(2);
  // The loader's own words, without the stale errno text Boost.DLL appends to them.
  EXPECT_EQ(str((*p)["reason"]).find("Bad file descriptor"), std::string::npos) << p->dump(2);
  EXPECT_EQ((*p)["origin"], "--plugin-dir");
  for (const json& d : report["devices"])
    EXPECT_NE(d["plugin"], (*p)["name"]) << "a device of a broken plugin was ranked: " << d.dump(2);
}

void expect_cpu_chosen(const json& report) {
  EXPECT_EQ(report["chosen"], "cpu:0") << report.dump(2);
  const json* cpu = find_plugin(report, "cpu");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ((*cpu)["status"], "ok") << cpu->dump(2);
}

class FaultPluginTest : public CliTest, public ::testing::WithParamInterface<FaultCase> {};

TEST_P(FaultPluginTest, IsReportedAndCpuStillChosen) {
  const FaultCase& c = GetParam();
  REQUIRE_CASE(c.folder);
  const auto start = std::chrono::steady_clock::now();
  const json report =
      probe({"--plugin-dir", case_dir(c.folder).string(), "--probe-timeout", std::to_string(kTimeoutMs)});
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(report.is_discarded());
  expect_reported(report, c);
  expect_cpu_chosen(report);
  EXPECT_LT(ms, kTimeoutMs + 3000) << "one probe took longer than its timeout allows";
}

INSTANTIATE_TEST_SUITE_P(Cases, FaultPluginTest, ::testing::ValuesIn(fault_cases()),
                         [](const ::testing::TestParamInfo<FaultCase>& info) {
                           std::string name = info.param.folder;
                           for (char& ch : name)
                             if (ch == '-') ch = '_';
                           return name;
                         });

using FaultProbeTest = CliTest;

TEST_F(FaultProbeTest, AllBrokenPluginsTogetherAreProbedInParallel) {
  std::vector<std::string> args;
  for (const FaultCase& c : fault_cases()) {
    REQUIRE_CASE(c.folder);
    args.push_back("--plugin-dir");
    args.push_back(case_dir(c.folder).string());
  }
  args.push_back("--probe-timeout");
  args.push_back(std::to_string(kTimeoutMs));
  const auto start = std::chrono::steady_clock::now();
  const json report = probe(args);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(report.is_discarded());
  for (const FaultCase& c : fault_cases()) expect_reported(report, c);
  expect_cpu_chosen(report);
  // Serial probing would take at least one timeout per hanging plugin and add up the rest;
  // in parallel the whole probe ends soon after one timeout.
  EXPECT_LT(ms, 2 * kTimeoutMs + 2000) << fault_cases().size() << " plugins";
  EXPECT_LT(report.value("elapsed_ms", 1e9), 2 * kTimeoutMs + 2000.0);
}

TEST_F(FaultProbeTest, SlowProbesOverlap) {
  // Four plugins whose probes each sleep 1 s: one after another that is 4 s, in parallel 1 s.
  std::vector<std::string> args;
  for (int i = 1; i <= 4; ++i) {
    ASSERT_TRUE(fs::exists(sleeper_plugin_dir(i))) << sleeper_plugin_dir(i);
    args.insert(args.end(), {"--plugin-dir", sleeper_plugin_dir(i).string()});
  }
  args.insert(args.end(), {"--probe-timeout", "6000"});
  RunOptions o;
  o.env["MLH_CLI_PROBE_SLEEP_MS"] = "1000";
  const auto start = std::chrono::steady_clock::now();
  const json report = probe(args, o);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(report.is_discarded());
  for (int i = 1; i <= 4; ++i) {
    const json* p = find_plugin(report, "clisleep" + std::to_string(i));
    ASSERT_NE(p, nullptr) << report.dump(2);
    EXPECT_EQ((*p)["status"], "ok") << p->dump(2);
    EXPECT_GE((*p)["elapsed_ms"].get<double>(), 900.0) << p->dump(2);
  }
  EXPECT_GE(ms, 1000);
  EXPECT_LT(ms, 2500) << "4 probes of 1 s each took " << ms << " ms: not probed in parallel";
}

TEST_F(FaultProbeTest, HangingPluginIsKilled) {
  REQUIRE_CASE("hang");
  const int timeout = 800;
  const Result r = host({"--probe", "--json", "--plugin-dir", case_dir("hang").string(), "--probe-timeout",
                         std::to_string(timeout)});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_GE(r.elapsed_ms, timeout * 0.9) << "returned before the timeout: was the plugin probed at all?";
  EXPECT_LT(r.elapsed_ms, timeout + 3000) << r.describe();
  const json report = stdout_json(r);
  ASSERT_FALSE(report.is_discarded());
  expect_reported(report, {"hang", {"did not answer"}});

  // The hung probe child must not outlive the host: had the host left it, it would now be
  // a child of this (subreaper) test process, with the hang library mapped.
  const std::string library = fs::weakly_canonical(case_dir("hang")).string();
  for (pid_t pid : orphaned_children()) {
    const std::string maps = read_file("/proc/" + std::to_string(pid) + "/maps");
    ADD_FAILURE() << "process " << pid << " outlived the host"
                  << (contains(maps, library) ? " with the hang plugin loaded" : "");
  }
}

TEST_F(FaultProbeTest, CtrlCDuringAProbeLeavesNoProbeChildBehind) {
  // A terminal's Ctrl-C sends SIGINT to the foreground process group (the host's). The
  // probe children run in groups of their own, so the host must end them itself: a hung
  // plugin's child would otherwise sleep on forever after the host is gone.
  REQUIRE_CASE("hang");
  RunOptions o;
  o.cwd = tmp();
  Process p({host_path().string(), "--probe", "--plugin-dir", case_dir("hang").string(), "--probe-timeout", "20000"},
            o);
  // Let the probe child start and load the plugin.
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  ASSERT_TRUE(p.running()) << p.wait(Millis(0)).describe();
  ASSERT_EQ(::kill(-p.pid(), SIGINT), 0);
  EXPECT_TRUE(p.wait_exit(Millis(10000))) << "the host ignored Ctrl-C during the probe";
  const std::vector<std::string> left = wait_for_orphans(Millis(3000));
  EXPECT_TRUE(left.empty()) << "still running after the host ended (the probe child of the hang plugin): "
                            << ::testing::PrintToString(left);
  kill_orphans();
  const Result r = p.wait(Millis(1000));
  EXPECT_TRUE(r.exit_code == 130 || r.signal == SIGINT) << r.describe();
}

TEST_F(FaultProbeTest, TimeoutIsPerPluginNotShared) {
  // A slow but good plugin (300 ms) next to a hanging one: the good one still answers, and
  // the hanging one is cut off at the timeout.
  REQUIRE_CASE("hang");
  REQUIRE_CASE("slow-good");
  const json report = probe({"--plugin-dir", case_dir("hang").string(), "--plugin-dir",
                             case_dir("slow-good").string(), "--probe-timeout", "1000"});
  ASSERT_FALSE(report.is_discarded());
  const json* slow = find_plugin_by_dir(report, case_dir("slow-good"));
  ASSERT_NE(slow, nullptr) << report.dump(2);
  EXPECT_EQ((*slow)["status"], "ok") << slow->dump(2);
  EXPECT_GE((*slow)["elapsed_ms"].get<double>(), 250.0) << slow->dump(2);
  EXPECT_LT((*slow)["elapsed_ms"].get<double>(), 1000.0) << slow->dump(2);
  const json* hang = find_plugin_by_dir(report, case_dir("hang"));
  ASSERT_NE(hang, nullptr);
  EXPECT_EQ((*hang)["status"], "failed");
  EXPECT_EQ(report["chosen"], "cpu:0");
}

TEST_F(FaultProbeTest, CrashReasonKeepsThePluginsLastOutputOffStdout) {
  // Whatever a plugin prints goes to the reason (stderr capture), never into the JSON on
  // stdout: the report must stay parseable with every broken plugin present.
  REQUIRE_CASE("crash");
  REQUIRE_CASE("throw-raw");
  const Result r = host({"--probe", "--json", "--plugin-dir", case_dir("crash").string(), "--plugin-dir",
                         case_dir("throw-raw").string(), "--probe-timeout", "3000"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const json report = stdout_json(r);
  ASSERT_FALSE(report.is_discarded());
  expect_reported(report, {"crash", {"signal 11"}});
  expect_reported(report, {"throw-raw", {"signal 6", "terminate", "exception across the C ABI"}});
}

}  // namespace
}  // namespace mlhost::cli_test
