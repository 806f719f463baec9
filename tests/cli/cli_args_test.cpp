// Bad command lines: exit status 2 and a message on stderr naming the option or value;
// help and version.
#include <regex>
#include <set>
#include <sstream>

#include "cli_harness.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace mlhost::cli_test {
namespace {

struct BadLine {
  const char* label;
  std::vector<std::string> args;
  std::vector<std::string> stderr_has;  // every one of these must be on stderr
};

void PrintTo(const BadLine& b, std::ostream* os) { *os << b.label; }

const std::vector<BadLine>& bad_lines() {
  static const std::vector<BadLine> lines = {
      {"unknown_option", {"--probe", "--frobnicate"}, {"--frobnicate"}},
      {"unknown_option_alone", {"--frobnicate"}, {"--frobnicate"}},
      {"bad_device", {"--probe", "--device", "gpu!"}, {"--device", "gpu!"}},
      {"bad_device_index", {"--probe", "--device", "cuda:x"}, {"--device", "cuda:x"}},
      {"bad_log_level", {"--probe", "--log-level", "loud"}, {"--log-level", "loud"}},
      {"probe_and_algorithm", {"--probe", "--algorithm", "x"}, {"--probe", "--algorithm"}},
      {"probe_and_list", {"--probe", "--list-plugins"}, {"--probe", "--list-plugins"}},
      {"set_with_probe", {"--probe", "--set", "steps=1"}, {"--set", "--algorithm"}},
      {"set_alone", {"--set", "steps=1"}, {"--algorithm"}},
      {"run_dir_with_probe", {"--probe", "--run-dir", "r"}, {"--run-dir", "--algorithm"}},
      // A calibration or a plan is for a config, not a run folder: say so, and where a run's
      // settings are.
      {"run_dir_with_calibrate", {"--calibrate", "--algorithm", "toyreg", "--run-dir", "r"},
       {"--run-dir", "not to --calibrate", "--config RUN_DIR/config.json"}},
      {"resume_with_print_plan", {"--print-plan", "--algorithm", "toyreg", "--run-dir", "r", "--resume"},
       {"--run-dir", "not to --print-plan"}},
      {"config_with_describe", {"--describe", "toyreg", "--config", "c.json"}, {"--config", "--algorithm"}},
      {"resume_without_run_dir", {"--algorithm", "toyreg", "--resume"}, {"--resume", "--run-dir"}},
      {"probe_timeout_zero", {"--probe", "--probe-timeout", "0"}, {"--probe-timeout"}},
      {"max_steps_zero", {"--algorithm", "toyreg", "--max-steps", "0"}, {"--max-steps", "'0'"}},
      {"max_steps_not_a_number", {"--algorithm", "toyreg", "--max-steps", "soon"}, {"--max-steps", "'soon'"}},
      {"max_steps_with_probe", {"--probe", "--max-steps", "3"}, {"--max-steps", "--algorithm"}},
      {"threads_zero", {"--print-plan", "--threads", "0"}, {"--threads", "'0'"}},
      {"threads_not_a_number", {"--print-plan", "--threads", "all"}, {"--threads", "'all'"}},
      {"threads_with_probe", {"--probe", "--threads", "2"}, {"--threads", "--algorithm"}},
      {"format_without_describe", {"--probe", "--format", "markdown"}, {"--format", "--describe"}},
      {"format_unknown", {"--describe", "toyreg", "--format", "yaml"}, {"--format", "'yaml'"}},
      {"probe_timeout_negative", {"--probe", "--probe-timeout", "-5"}, {"--probe-timeout"}},
      {"probe_timeout_not_a_number", {"--probe", "--probe-timeout", "soon"}, {"probe-timeout", "soon"}},
      {"missing_value", {"--probe", "--device"}, {"device"}},
      {"json_with_print_plan", {"--print-plan", "--json"}, {"--json"}},
      {"json_disagrees_with_format", {"--describe", "toyreg", "--json", "--format", "markdown"}, {"--json", "markdown"}},
      {"no_gpu_contradicts_cuda", {"--probe", "--no-gpu", "--device", "cuda"}, {"--no-gpu", "--device cuda"}},
      {"empty_plugin_dir", {"--probe", "--plugin-dir", ""}, {"--plugin-dir"}},
      {"plugin_dir_missing", {"--probe", "--plugin-dir", "/nonexistent/mlhost-plugins"},
       {"--plugin-dir", "/nonexistent/mlhost-plugins"}},
      {"plugin_dir_missing_list", {"--list-plugins", "--plugin-dir", "/nonexistent/mlhost-plugins"},
       {"--plugin-dir", "/nonexistent/mlhost-plugins"}},
  };
  return lines;
}

class BadCommandLineTest : public CliTest, public ::testing::WithParamInterface<BadLine> {};

TEST_P(BadCommandLineTest, ExitsWithStatus2AndNamesTheProblem) {
  const BadLine& b = GetParam();
  const Result r = host(b.args);
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "host: error:")) << r.describe();
  for (const std::string& s : b.stderr_has) EXPECT_TRUE(contains(r.err, s)) << "stderr should name " << s << r.describe();
  EXPECT_TRUE(r.out.empty()) << "nothing on stdout for a bad command line" << r.describe();
  EXPECT_FALSE(fs::exists(tmp() / "runs")) << "a bad command line created a run folder";
}

INSTANTIATE_TEST_SUITE_P(Lines, BadCommandLineTest, ::testing::ValuesIn(bad_lines()),
                         [](const ::testing::TestParamInfo<BadLine>& info) { return std::string(info.param.label); });

using HelpTest = CliTest;

TEST_F(HelpTest, BareHostPrintsHelp) {
  const Result r = host({});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "Usage: host")) << r.describe();
  for (const char* opt : {"--probe", "--list-plugins", "--describe", "--algorithm", "--plugin-dir", "--device",
                          "--no-gpu", "--probe-timeout", "--set", "--run-dir", "--resume"})
    EXPECT_TRUE(contains(r.out, opt)) << "help does not mention " << opt;
  EXPECT_TRUE(r.err.empty()) << r.describe();
}

TEST_F(HelpTest, HelpOption) {
  for (const char* flag : {"--help", "-h"}) {
    const Result r = host({flag});
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    EXPECT_TRUE(contains(r.out, "Usage: host")) << r.describe();
  }
  // --help wins over anything else on the line.
  const Result r = host({"--help", "--probe"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "Usage: host")) << r.describe();
}

// The command-line reference (docs/cli.md) names every option --help lists, so the table stays
// complete as options are added (and names none that --help does not know).
TEST_F(HelpTest, TheCliReferenceHasEveryOptionOfHelp) {
  const Result r = host({"--help"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  // Options start two spaces in; wrapped descriptions are indented further.
  const std::regex help_option(R"(^  (?:-\w \[ )?(--[a-z][a-z-]*))");
  std::set<std::string> in_help;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, help_option)) in_help.insert(m[1]);
  }
  ASSERT_GT(in_help.size(), 30u) << r.out;
  const std::string readme = read_file(MLH_CLI_REFERENCE);
  ASSERT_FALSE(readme.empty()) << "cannot read " << MLH_CLI_REFERENCE;
  std::set<std::string> in_table;
  const std::regex table_row(R"(\n\| `(--[a-z][a-z-]*))");
  for (auto it = std::sregex_iterator(readme.begin(), readme.end(), table_row); it != std::sregex_iterator(); ++it)
    in_table.insert((*it)[1]);
  for (const std::string& option : in_help) EXPECT_TRUE(in_table.count(option)) << option << " is not in docs/cli.md's option table";
  for (const std::string& option : in_table) EXPECT_TRUE(in_help.count(option)) << option << " in docs/cli.md is not a host option";
}

TEST_F(HelpTest, VersionPrintsTheVersion) {
  const Result r = host({"--version"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "mlhost " + project_version())) << r.describe();
  EXPECT_TRUE(contains(r.out, "ABI 1.")) << r.describe();
}

TEST_F(HelpTest, ProbeTimeoutAcceptsAPositiveNumber) {
  const Result r = host({"--probe", "--json", "--probe-timeout", "5000", "--log-level", "warn"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_FALSE(stdout_json(r).is_discarded());
}

}  // namespace
}  // namespace mlhost::cli_test
