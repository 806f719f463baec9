// The shell blocks of the README and docs/ are what users copy: each must at least be valid
// shell (`bash -n`), so that an unquoted `lr=loguniform(1e-4,1e-2)` cannot come back.
#include <regex>

#include "cli_harness.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

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

// docs/code-map.md is where the next engineer starts: every file and folder it names in
// backticks exists. A path with a slash must be a tracked path or end one (the map writes
// `plan/machine_share.cpp` inside host/); a bare file name must be some file's name;
// `<name>` stands for each algorithm.
TEST_F(DocsTest, TheCodeMapNamesFilesThatExist) {
  const fs::path root(MLH_CLI_SOURCE_DIR);
  std::vector<std::string> files, folders;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const std::string name = it->path().filename().string();
    if (it->is_directory() && (name[0] == '.' || name.rfind("build", 0) == 0 || name == "__pycache__")) {
      it.disable_recursion_pending();
      continue;
    }
    const std::string rel = fs::relative(it->path(), root).string();
    (it->is_directory() ? folders : files).push_back(rel + (it->is_directory() ? "/" : ""));
  }
  auto exists = [&](const std::string& token) {
    const std::vector<std::string>& pool = token.back() == '/' ? folders : files;
    for (const std::string& f : pool) {
      if (token.find('/') == std::string::npos || token.back() == '/' && token.find('/') == token.size() - 1) {
        const std::string base = fs::path(f.back() == '/' ? f.substr(0, f.size() - 1) : f).filename().string();
        if (base + (token.back() == '/' ? "/" : "") == token) return true;
      } else if (f == token || (f.size() > token.size() && f.compare(f.size() - token.size(), token.size(), token) == 0 &&
                                f[f.size() - token.size() - 1] == '/')) {
        return true;
      }
    }
    return false;
  };
  const std::string text = read_file(root / "docs" / "code-map.md");
  const std::regex quoted("`([A-Za-z0-9_<>./-]+)`");
  const std::regex pathlike(R"(.*(/|\.(cpp|hpp|h|cmake|md|py|sh|txt))$)");
  int checked = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), quoted); it != std::sregex_iterator(); ++it) {
    const std::string token = (*it)[1].str();
    if (!std::regex_match(token, pathlike) || token.find("..") != std::string::npos) continue;
    std::vector<std::string> expanded;
    if (token.find("<name>") != std::string::npos) {
      for (const std::string algorithm : {"protonet", "ppo", "trm"})
        expanded.push_back(std::regex_replace(token, std::regex("<name>"), algorithm));
    } else {
      expanded.push_back(token);
    }
    for (const std::string& path : expanded) {
      ++checked;
      EXPECT_TRUE(exists(path)) << "docs/code-map.md names `" << path << "`, which is not in the tree";
    }
  }
  EXPECT_GT(checked, 40) << "the code map names few files: did its format change?";

  // The roles every algorithm folder has, as the map lists them (the parts in parentheses are
  // an algorithm's own names for a role): each is a file of each algorithm.
  const std::string start = "Every algorithm folder has these files for these roles:", end = "Beside them";
  const size_t from = text.find(start), to = text.find(end, from);
  ASSERT_NE(from, std::string::npos) << "docs/code-map.md no longer lists the algorithm folders' roles";
  const std::string roles = std::regex_replace(text.substr(from, to - from), std::regex(R"(\([^()]*\))"), "");
  int listed = 0;
  for (auto it = std::sregex_iterator(roles.begin(), roles.end(), quoted); it != std::sregex_iterator(); ++it) {
    const std::string role = (*it)[1].str();
    if (role.find('.') != std::string::npos || role.find('/') != std::string::npos) continue;
    ++listed;
    for (const char* algorithm : {"protonet", "ppo", "trm"})
      EXPECT_TRUE(fs::exists(root / "algorithms" / algorithm / (role + ".cpp")))
          << "docs/code-map.md says every algorithm has `" << role << "`; algorithms/" << algorithm << " has no "
          << role << ".cpp";
  }
  EXPECT_GE(listed, 10) << roles;
}

}  // namespace
}  // namespace mlhost::cli_test
