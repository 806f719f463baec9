// The CLI tests' harness: runs the real `host` executable as a child process and reads
// what it wrote, plus small helpers for temporary folders, files and the probe report.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "temp_dir.hpp"

namespace mlhost::cli_test {

namespace fs = std::filesystem;
using nlohmann::json;
using Millis = std::chrono::milliseconds;

// Paths from the build (compile definitions).
fs::path host_path();
fs::path default_plugin_dir();  // where the real CPU plugin is built
fs::path test_plugin_root();    // ${MLH_TEST_PLUGIN_ROOT}: one folder per fault case
fs::path marker_plugin_dir();   // the climarker plugin of tests/cli
fs::path sleeper_plugin_dir(int i);  // clisleep<i> (1..4) of tests/cli
std::string project_version();
bool have_toyreg();

// The folder of one test plugin case (MLH_TEST_PLUGIN_ROOT/<name>).
fs::path case_dir(const std::string& name);
// Empty when the case folder holds a manifest; otherwise why not (the case was not built).
std::string case_problem(const std::string& name);

struct RunOptions {
  std::map<std::string, std::string> env;  // set in the child (MLH_PLUGIN_PATH is unset unless given)
  std::vector<std::string> unset_env;      // removed from the child's environment
  fs::path cwd;                            // empty: the test's current folder
  Millis timeout{120000};                  // the child is killed (whole group) after this
};

struct Result {
  int exit_code = -1;  // -1 when a signal ended it
  int signal = 0;      // the signal that ended it
  bool timed_out = false;
  std::string out, err;
  double elapsed_ms = 0;
  std::vector<std::string> argv;
  // For assertion messages: the command, how it ended, stdout and stderr (shortened).
  std::string describe() const;
};

// A running child with stdout and stderr captured separately (a thread drains both, so the
// child never blocks on a full pipe). The child runs in a process group of its own.
class Process {
 public:
  Process(std::vector<std::string> argv, const RunOptions& options);
  ~Process();  // kills the child's group if it still runs
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  // True while the child has not exited (does not reap it).
  bool running();
  // Waits until the child has exited (without reaping it or closing its output pipes).
  bool wait_exit(Millis timeout);
  // Waits until the child exits or `timeout` passes; then kills its group and reaps it.
  Result wait(Millis timeout);
  std::string stdout_so_far();
  std::string stderr_so_far();

 private:
  void reader();
  void finish_reading(Millis grace);

  std::vector<std::string> argv_;
  pid_t pid_ = -1;
  int out_fd_ = -1, err_fd_ = -1;
  std::chrono::steady_clock::time_point start_;
  std::thread reader_;
  std::atomic<bool> stop_reading_{false};
  std::atomic<bool> reader_done_{false};
  std::mutex mu_;
  std::string out_, err_;
  bool reaped_ = false;
  int wait_status_ = 0;
};

// Runs argv to completion.
Result run(const std::vector<std::string>& argv, const RunOptions& options = {});
// Runs the host with these arguments.
Result run_host(const std::vector<std::string>& args, const RunOptions& options = {});

// The test process is a child subreaper, so a grandchild the host leaves behind becomes
// ours when the host exits. These are our children that no Process tracks.
std::vector<pid_t> orphaned_children();
// Kills (SIGKILL, with their process groups) and reaps them. Returns how many there were.
size_t kill_orphans();
// Waits up to `timeout` for every orphan to exit (reaping them); returns those still running,
// each as "pid (command line)".
std::vector<std::string> wait_for_orphans(Millis timeout);
// The processes whose parent is `parent`, e.g. the workers of a host (from /proc).
std::vector<pid_t> children_of(pid_t parent);
// The worker of the host `parent` for `rank` (its process name is "host-rank<rank>"); -1 when none.
pid_t worker_of_rank(pid_t parent, int rank);

std::string read_file(const fs::path& path);  // "" when unreadable
// A hardware settings file in `dir` for single-threaded LibTorch (intra- and inter-op), which
// keeps a run's arithmetic bit-identical from one run to the next; returns its path.
fs::path single_thread_settings(const fs::path& dir);
void write_file(const fs::path& path, const std::string& text, fs::perms mode = fs::perms(0644));
// Copies a plugin folder's regular files into `to` (created 0755) with safe modes:
// 0755 for libraries, 0644 for the rest.
void copy_plugin_dir(const fs::path& from, const fs::path& to);
// Every regular file below `dir` (relative path -> content), for before/after comparisons.
std::map<std::string, std::string> snapshot_dir(const fs::path& dir);
// Lines of a text file (without the newline characters).
std::vector<std::string> read_lines(const fs::path& path);
// Each line of a JSON-lines file parsed; a line that is not JSON fails the test.
std::vector<json> read_jsonl(const fs::path& path);

// Parses the child's whole stdout as JSON; on failure records a test failure (with the
// child's output) and returns a discarded value.
json stdout_json(const Result& r);
json file_json(const fs::path& path);  // discarded value (plus a test failure) when unreadable

bool contains(const std::string& haystack, const std::string& needle);
bool contains_any(const std::string& haystack, const std::vector<std::string>& needles);
std::string str(const json& j);  // the string value, or its dump when not a string

// Probe report lookups; nullptr when missing.
const json* find_plugin_by_dir(const json& report, const fs::path& dir);  // by its library's folder
const json* find_plugin(const json& report, const std::string& name);     // first entry of that name
const json* find_device(const json& report, const std::string& id);
std::vector<std::string> plugin_names_in(const json& list_or_report);
// The name field of the (only) manifest in a plugin folder.
std::string manifest_name(const fs::path& dir);

// The fixture every CLI test uses: a fresh temporary folder the host runs in, and a
// cleanup of anything the host left behind.
class CliTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // The host, run in the temporary folder (unless options.cwd says otherwise).
  Result host(const std::vector<std::string>& args, RunOptions options = {});
  // `host --probe --json <extra>`: exit 0 expected, stdout parsed (discarded on failure).
  json probe(const std::vector<std::string>& extra, RunOptions options = {});
  json list_plugins(const std::vector<std::string>& extra, RunOptions options = {});

  fs::path tmp() const { return tmp_->path(); }

  std::unique_ptr<TempDir> tmp_;
};

// A CLI test that runs the toyreg algorithm plugin (it needs LibTorch): toyreg_ is its folder.
class ToyregTest : public CliTest {
 protected:
  void SetUp() override;

  std::string toyreg_;
};

}  // namespace mlhost::cli_test

// Fails the current test (fatally) when a test plugin case was not built.
#define REQUIRE_CASE(name)                                                        \
  do {                                                                            \
    const std::string problem_ = ::mlhost::cli_test::case_problem(name);          \
    ASSERT_TRUE(problem_.empty()) << problem_;                                    \
  } while (0)
