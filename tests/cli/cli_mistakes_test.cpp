// The first hour's mistakes, as docs/troubleshooting.md's exit-status table promises them:
// each exits 2 with a message that names what is wrong (and, where there is one, what to type
// instead), and leaves no folder behind. Run through the real host with toyreg (an algorithm
// with train, eval, benchmark and calibrate, like the shipped ones), in a fresh folder each.
#include <algorithm>
#include <string>
#include <vector>

#include "cli_harness.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace mlhost::cli_test {
namespace {

class FirstHourMistakes : public ToyregTest {
 protected:
  // The host with toyreg's folder, and --algorithm toyreg unless `extra` names an algorithm.
  Result toyreg(const std::vector<std::string>& extra) {
    std::vector<std::string> args{"--plugin-dir", toyreg_};
    if (std::find(extra.begin(), extra.end(), "--algorithm") == extra.end()) args.insert(args.end(), {"--algorithm", "toyreg"});
    args.insert(args.end(), extra.begin(), extra.end());
    RunOptions o;
    o.timeout = Millis(180000);
    return host(args, o);
  }
  // What is in the test's folder (names only), to see that a refused command made nothing.
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& e : fs::recursive_directory_iterator(tmp())) names.push_back(fs::relative(e.path(), tmp()).string());
    std::sort(names.begin(), names.end());
    return names;
  }
  // The mistake exits 2, its message holds every fragment, and the folder is as it was.
  void expect_refused(const std::string& what, const std::vector<std::string>& args,
                      const std::vector<std::string>& fragments) {
    SCOPED_TRACE(what);
    const std::vector<std::string> before = listing();
    const Result r = toyreg(args);
    EXPECT_EQ(r.exit_code, 2) << r.describe();
    for (const std::string& f : fragments) EXPECT_TRUE(contains(r.err, f)) << "'" << f << "' in\n" << r.describe();
    EXPECT_EQ(listing(), before) << "a refused command leaves no folder\n" << r.describe();
  }
};

TEST_F(FirstHourMistakes, EachExits2NamingTheFixAndLeavesNoFolder) {
  // Devices this machine does not have (no test machine has an MPS device; CUDA ones are
  // refused only where there is none).
  expect_refused("--device mps", {"--device", "mps"}, {"--device cpu"});
  const json report = probe({});
  bool has_gpu = false;
  for (const json& d : report.value("devices", json::array()))
    has_gpu = has_gpu || d.value("class", "").find("gpu") != std::string::npos;
  if (!has_gpu) {
    expect_refused("--device cuda", {"--device", "cuda"}, {"--device cpu"});
    expect_refused("--device gpu", {"--device", "gpu"}, {"--device cpu"});
  }

  // The command line and config.
  expect_refused("an unknown option", {"--no-such-option"}, {"--no-such-option"});
  expect_refused("an unknown algorithm", {"--algorithm", "nosuch"}, {"nosuch"});
  expect_refused("an unknown command", {"--command", "nosuch"}, {"nosuch"});
  expect_refused("an unknown field", {"--set", "no_such_field=1"}, {"no_such_field"});
  expect_refused("a value of the wrong type", {"--set", "lr=fast"}, {"lr", "fast"});
  expect_refused("a value out of range", {"--set", "steps=0"}, {"steps"});
  expect_refused("a missing config file", {"--config", "missing.json"}, {"missing.json"});
  expect_refused("a missing --init-from file", {"--init-from", "missing.safetensors"}, {"missing.safetensors"});

  // Commands that work on a trained run, without one: what to type instead.
  expect_refused("eval without --resume", {"--command", "eval"}, {"'eval' works on a trained run", "--resume"});
  expect_refused("eval with --resume auto where no run is", {"--run-dir", "runs/none", "--resume", "auto", "--command", "eval"},
                 {"--resume"});
  expect_refused("eval of a folder that does not exist", {"--run-dir", "runs/none", "--resume", "--command", "eval"},
                 {"does not exist", "'eval' works on a trained run: name the folder its training wrote"});

  // A trained run: starting again in its folder, and a run that never saved a checkpoint.
  const Result trained = toyreg({"--run-dir", "runs/mine", "--set", "steps=5"});
  ASSERT_EQ(trained.exit_code, 0) << trained.describe();
  expect_refused("a new run in a run's folder", {"--run-dir", "runs/mine"}, {"already holds a run", "--resume"});
  fs::remove_all(tmp() / "runs/mine/checkpoints");
  expect_refused("eval of a run without checkpoints", {"--run-dir", "runs/mine", "--resume", "--command", "eval"},
                 {"holds no checkpoints", "train it first"});
  EXPECT_FALSE(fs::exists(tmp() / "runs/mine/commands/eval-1")) << "no command folder is left";
}

// docs/troubleshooting.md's table and docs/cli.md's list hold the statuses the host uses:
// 0, 1, 2, 75 and 130, each once in the table.
TEST_F(FirstHourMistakes, TheDocsExitStatusTableHoldsTheHostsStatuses) {
  const std::string table = read_file(fs::path(MLH_CLI_SOURCE_DIR) / "docs/troubleshooting.md");
  ASSERT_FALSE(table.empty());
  for (const char* status : {"| 0 |", "| 1 |", "| 2 |", "| 75 |", "| 130 |"})
    EXPECT_TRUE(contains(table, status)) << status << " is missing from troubleshooting.md's exit-status table";
  const std::string cli = read_file(fs::path(MLH_CLI_SOURCE_DIR) / "docs/cli.md");
  for (const char* status : {"0 success", "2 a bad command line", "1 a failed run", "130 a run stopped", "75 a run preempted"})
    EXPECT_TRUE(contains(cli, status)) << status << " is missing from cli.md's exit statuses";
}

}  // namespace
}  // namespace mlhost::cli_test
