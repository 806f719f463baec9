// The manual's config reference (docs/config/NAME.md) is what `host --describe NAME --format
// markdown` prints for the built plugins: a field added to an algorithm's config table and not
// to the page, or a page edited by hand, fails here. Regenerate with
//   build/bin/host --describe NAME --format markdown > docs/config/NAME.md
#include <sstream>

#include "cli_harness.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace mlhost::cli_test {
namespace {

using ConfigReferenceTest = CliTest;

TEST_F(ConfigReferenceTest, TheCommittedPagesAreWhatTheHostPrints) {
  int compared = 0;
  for (const std::string name : {"protonet", "ppo", "trm"}) {
    SCOPED_TRACE(name);
    if (!fs::exists(default_plugin_dir() / (name + ".plugin.json"))) continue;  // a build without LibTorch
    RunOptions slow;
    slow.timeout = std::chrono::seconds(120);
    const Result r = host({"--describe", name, "--format", "markdown"}, slow);
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    const fs::path page = fs::path(MLH_CLI_SOURCE_DIR) / "docs" / "config" / (name + ".md");
    EXPECT_EQ(r.out, read_file(page)) << page << " differs from `host --describe " << name
                                      << " --format markdown`: regenerate it";
    // Every field's row says what it means: the last cell is not empty.
    std::istringstream lines(r.out);
    int rows = 0;
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("| `", 0) != 0 || line.find("` | ") == std::string::npos) continue;
      if (line.find(" = `") != std::string::npos) continue;  // the presets' table
      ++rows;
      EXPECT_NE(line.substr(line.size() - 4), "|  |") << "a field without a meaning: " << line;
    }
    EXPECT_GT(rows, 30) << r.out;
    ++compared;
  }
  if (compared == 0) GTEST_SKIP() << "no algorithm plugin built (a build without LibTorch)";
}

}  // namespace
}  // namespace mlhost::cli_test
