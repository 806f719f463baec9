// The shell blocks of the README and docs/ are what users copy: each must at least be valid
// shell (`bash -n`), so that an unquoted `lr=loguniform(1e-4,1e-2)` cannot come back.
#include <regex>

#include "cli_harness.hpp"

namespace mlhost::cli_test {
namespace {

using DocsTest = CliTest;

TEST_F(DocsTest, EveryShellBlockIsValidShell) {
  std::vector<fs::path> pages{fs::path(MLH_CLI_SOURCE_DIR) / "README.md"};
  for (const auto& e : fs::recursive_directory_iterator(fs::path(MLH_CLI_SOURCE_DIR) / "docs"))
    if (e.path().extension() == ".md") pages.push_back(e.path());
  const std::regex block("```(sh|bash)\\n([\\s\\S]*?)```");
  int blocks = 0;
  for (const fs::path& page : pages) {
    const std::string text = read_file(page);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), block); it != std::sregex_iterator(); ++it) {
      ++blocks;
      const fs::path script = tmp() / ("block" + std::to_string(blocks) + ".sh");
      write_file(script, (*it)[2].str());
      const Result r = run({"/bin/bash", "-n", script.string()});
      const size_t line = static_cast<size_t>(std::count(text.begin(), text.begin() + it->position(), '\n')) + 1;
      EXPECT_EQ(r.exit_code, 0) << page << ":" << line << ": not valid shell: " << r.err;
    }
  }
  EXPECT_GT(blocks, 10) << "no shell blocks found in README.md and docs/";
}

}  // namespace
}  // namespace mlhost::cli_test
