#include "cli_harness.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include "mlh_test_paths.hpp"  // where this program finds its files

extern char** environ;

namespace mlhost::cli_test {

namespace {

using Clock = std::chrono::steady_clock;

std::mutex g_tracked_mu;
std::set<pid_t> g_tracked;  // children a Process owns

void become_subreaper() {
  static const bool done = [] {
    // Orphans of the host (a probe child or worker it failed to end) become our children,
    // so the tests can see them and clean them up.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    return true;
  }();
  (void)done;
}

std::string shorten(const std::string& s, size_t max) {
  if (s.size() <= max) return s;
  return s.substr(0, max / 2) + "\n[... " + std::to_string(s.size() - max) + " bytes left out ...]\n" +
         s.substr(s.size() - max / 2);
}

std::string quote_arg(const std::string& a) {
  if (!a.empty() && a.find_first_of(" \t\"'$\\") == std::string::npos) return a;
  std::string q = "'";
  for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

pid_t parent_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  std::getline(in, stat);
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(stat.substr(close + 1));
  char state = 0;
  long ppid = -1;
  rest >> state >> ppid;
  return static_cast<pid_t>(ppid);
}

}  // namespace

// --- paths ---------------------------------------------------------------------------------

fs::path host_path() { return MLH_CLI_HOST; }
fs::path default_plugin_dir() { return fs::path(MLH_CLI_DEFAULT_PLUGIN_DIR).lexically_normal(); }
fs::path test_plugin_root() { return MLH_CLI_TEST_PLUGIN_ROOT; }
fs::path marker_plugin_dir() { return MLH_CLI_MARKER_PLUGIN_DIR; }
fs::path sleeper_plugin_dir(int i) { return fs::path(MLH_CLI_PLUGIN_ROOT) / ("sleep" + std::to_string(i)); }
std::string project_version() { return MLH_CLI_VERSION; }
bool have_toyreg() { return MLH_CLI_HAVE_TOYREG != 0; }

fs::path case_dir(const std::string& name) { return test_plugin_root() / name; }

std::string case_problem(const std::string& name) {
  const fs::path dir = case_dir(name);
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return "test plugin case '" + name + "' is not built: no folder " + dir.string() +
           " (target mlhost-test-plugins / tests/plugins)";
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string f = e.path().filename().string();
    if (f.size() > 12 && f.compare(f.size() - 12, 12, ".plugin.json") == 0) return "";
  }
  return "test plugin case '" + name + "' has no manifest in " + dir.string();
}

// --- processes -----------------------------------------------------------------------------

std::string Result::describe() const {
  std::string cmd;
  for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + quote_arg(a);
  std::string how = timed_out ? "TIMED OUT (killed)"
                    : signal  ? "killed by signal " + std::to_string(signal)
                              : "exit status " + std::to_string(exit_code);
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.0f ms", elapsed_ms);
  return "\n$ " + cmd + "\n-> " + how + " after " + ms + "\n--- stdout ---\n" + shorten(out, 6000) +
         "\n--- stderr ---\n" + shorten(err, 6000) + "\n--------------";
}

Process::Process(std::vector<std::string> argv, const RunOptions& options) : argv_(std::move(argv)) {
  become_subreaper();
  // Everything the child needs is built before fork: after it only async-signal-safe calls.
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  env.erase("MLH_PLUGIN_PATH");  // hermetic: only what the test gives
  // Hermetic plans: no calibration before a run (it would add a minute, and change the plan's
  // threads), and no calibration cached by the user's own runs. The calibration tests set
  // their own cache folder and unset MLH_NO_CALIBRATE.
  env["MLH_NO_CALIBRATE"] = "1";
  // Tests run side by side: each plans as on a machine of its own (SharedMachineTest unsets it).
  env["MLH_MACHINE_SHARING"] = "dedicated";
  env["XDG_CACHE_HOME"] = (fs::temp_directory_path() / ("mlhost-cli-test-cache-" + std::to_string(::getpid()))).string();
  for (const auto& name : options.unset_env) env.erase(name);
  for (const auto& [k, v] : options.env) env[k] = v;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  for (auto& a : argv_) args.push_back(a.data());
  args.push_back(nullptr);
  const std::string cwd = options.cwd.string();

  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
  start_ = Clock::now();
  std::lock_guard<std::mutex> lock(g_tracked_mu);
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid_ == 0) {
    ::setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::signal(SIGPIPE, SIG_DFL);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(err_pipe[1], STDERR_FILENO);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) {
      const char msg[] = "cli test harness: chdir failed\n";
      (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
      ::_exit(126);
    }
    ::execve(args[0], args.data(), envp.data());
    const char msg[] = "cli test harness: execve failed\n";
    (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::setpgid(pid_, pid_);
  g_tracked.insert(pid_);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  out_fd_ = out_pipe[0];
  err_fd_ = err_pipe[0];
  reader_ = std::thread([this] { reader(); });
}

Process::~Process() {
  if (!reaped_) wait(Millis(0));
  finish_reading(Millis(0));
}

void Process::reader() {
  bool out_open = true, err_open = true;
  char buf[65536];
  while ((out_open || err_open) && !stop_reading_) {
    pollfd fds[2];
    int n = 0;
    int out_i = -1, err_i = -1;
    if (out_open) out_i = n, fds[n++] = {out_fd_, POLLIN, 0};
    if (err_open) err_i = n, fds[n++] = {err_fd_, POLLIN, 0};
    int r = ::poll(fds, n, 50);
    if (r < 0 && errno != EINTR) break;
    for (int k = 0; r > 0 && k < n; ++k) {
      if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = ::read(fds[k].fd, buf, sizeof buf);
      if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (got <= 0) {
        if (k == out_i) out_open = false;
        if (k == err_i) err_open = false;
        continue;
      }
      std::lock_guard<std::mutex> lock(mu_);
      (k == out_i ? out_ : err_).append(buf, static_cast<size_t>(got));
    }
  }
  reader_done_ = true;
}

void Process::finish_reading(Millis grace) {
  // The pipes close when every process holding them is gone; a descendant the host left
  // behind may keep them open, so give up after `grace`.
  const auto deadline = Clock::now() + grace;
  while (!reader_done_ && Clock::now() < deadline) ::usleep(2000);
  stop_reading_ = true;
  if (reader_.joinable()) reader_.join();
  if (out_fd_ >= 0) ::close(out_fd_), out_fd_ = -1;
  if (err_fd_ >= 0) ::close(err_fd_), err_fd_ = -1;
}

bool Process::running() {
  if (reaped_) return false;
  // WNOWAIT: look without reaping, so wait() still gets the status.
  siginfo_t info{};
  info.si_pid = 0;
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return false;
  return info.si_pid == 0;
}

bool Process::wait_exit(Millis timeout) {
  const auto deadline = Clock::now() + timeout;
  while (running()) {
    if (Clock::now() >= deadline) return false;
    ::usleep(2000);
  }
  return true;
}

Result Process::wait(Millis timeout) {
  Result r;
  r.argv = argv_;
  const auto deadline = Clock::now() + timeout;
  while (!reaped_) {
    pid_t got = ::waitpid(pid_, &wait_status_, WNOHANG);
    if (got == pid_) {
      reaped_ = true;
      break;
    }
    if (got < 0 && errno != EINTR) {
      reaped_ = true;
      wait_status_ = 0;
      break;
    }
    if (Clock::now() >= deadline) {
      r.timed_out = true;
      ::kill(-pid_, SIGKILL);
      ::kill(pid_, SIGKILL);
      while (::waitpid(pid_, &wait_status_, 0) < 0 && errno == EINTR) {
      }
      reaped_ = true;
      break;
    }
    ::usleep(2000);
  }
  r.elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - start_).count();
  {
    std::lock_guard<std::mutex> lock(g_tracked_mu);
    g_tracked.erase(pid_);
  }
  ::kill(-pid_, SIGKILL);  // anything left in the child's own group
  finish_reading(Millis(3000));
  if (WIFEXITED(wait_status_)) r.exit_code = WEXITSTATUS(wait_status_);
  if (WIFSIGNALED(wait_status_)) r.signal = WTERMSIG(wait_status_);
  std::lock_guard<std::mutex> lock(mu_);
  r.out = out_;
  r.err = err_;
  return r;
}

std::string Process::stdout_so_far() {
  std::lock_guard<std::mutex> lock(mu_);
  return out_;
}

std::string Process::stderr_so_far() {
  std::lock_guard<std::mutex> lock(mu_);
  return err_;
}

Result run(const std::vector<std::string>& argv, const RunOptions& options) {
  Process p(argv, options);
  return p.wait(options.timeout);
}

Result run_host(const std::vector<std::string>& args, const RunOptions& options) {
  std::vector<std::string> argv{host_path().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, options);
}

fs::path single_thread_settings(const fs::path& dir) {
  const fs::path file = dir / "single-thread.ini";
  write_file(file, "intra_op_threads = 1\ninter_op_threads = 1\n");
  return file;
}

std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (end && !*end && pid > 0 && parent_of(static_cast<pid_t>(pid)) == parent) out.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(d);
  return out;
}

pid_t worker_of_rank(pid_t parent, int rank) {
  for (pid_t pid : children_of(parent))
    if (read_file(fs::path("/proc") / std::to_string(pid) / "comm") == "host-rank" + std::to_string(rank) + "\n")
      return pid;
  return -1;
}

std::vector<pid_t> orphaned_children() {
  std::set<pid_t> tracked;
  {
    std::lock_guard<std::mutex> lock(g_tracked_mu);
    tracked = g_tracked;
  }
  std::vector<pid_t> out;
  for (pid_t pid : children_of(::getpid()))
    if (!tracked.count(pid)) out.push_back(pid);
  return out;
}

size_t kill_orphans() {
  size_t n = 0;
  for (int round = 0; round < 5; ++round) {
    const auto pids = orphaned_children();
    if (pids.empty()) break;
    for (pid_t p : pids) {
      ::kill(-p, SIGKILL);
      ::kill(p, SIGKILL);
      ::waitpid(p, nullptr, 0);
      ++n;
    }
  }
  return n;
}

std::vector<std::string> wait_for_orphans(Millis timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    std::vector<pid_t> pids = orphaned_children();
    std::vector<std::string> alive;
    for (pid_t p : pids) {
      int status = 0;
      if (::waitpid(p, &status, WNOHANG) == p) continue;  // exited (a zombie): reaped now
      std::string cmd = read_file("/proc/" + std::to_string(p) + "/cmdline");
      std::replace(cmd.begin(), cmd.end(), '\0', ' ');
      alive.push_back(std::to_string(p) + " (" + cmd + ")");
    }
    if (alive.empty() || Clock::now() >= deadline) return alive;
    ::usleep(20000);
  }
}

// --- files -------------------------------------------------------------------------------

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const fs::path& path, const std::string& text, fs::perms mode) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + path.string());
  }
  fs::permissions(path, mode, fs::perm_options::replace);
}

void copy_plugin_dir(const fs::path& from, const fs::path& to) {
  fs::create_directories(to);
  fs::permissions(to, fs::perms(0755), fs::perm_options::replace);
  for (const auto& e : fs::directory_iterator(from)) {
    if (!e.is_regular_file()) continue;
    const fs::path dest = to / e.path().filename();
    fs::copy_file(e.path(), dest, fs::copy_options::overwrite_existing);
    const bool library = e.path().extension() == ".so";
    fs::permissions(dest, fs::perms(library ? 0755 : 0644), fs::perm_options::replace);
  }
}

std::map<std::string, std::string> snapshot_dir(const fs::path& dir) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_regular_file()) out[fs::relative(it->path(), dir).string()] = read_file(it->path());
  return out;
}

std::vector<std::string> read_lines(const fs::path& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<json> read_jsonl(const fs::path& path) {
  std::vector<json> out;
  size_t n = 0;
  for (const std::string& line : read_lines(path)) {
    ++n;
    if (line.empty()) continue;
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded()) {
      ADD_FAILURE() << path << " line " << n << " is not JSON: " << line;
      continue;
    }
    out.push_back(std::move(j));
  }
  return out;
}

json stdout_json(const Result& r) {
  json j = json::parse(r.out, nullptr, false);
  if (j.is_discarded()) ADD_FAILURE() << "stdout is not (only) JSON:" << r.describe();
  return j;
}

json file_json(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    ADD_FAILURE() << path << " does not exist";
    return json(json::value_t::discarded);
  }
  json j = json::parse(read_file(path), nullptr, false);
  if (j.is_discarded()) ADD_FAILURE() << path << " is not JSON:\n" << read_file(path);
  return j;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

bool contains_any(const std::string& haystack, const std::vector<std::string>& needles) {
  return std::any_of(needles.begin(), needles.end(), [&](const std::string& n) { return contains(haystack, n); });
}

std::string str(const json& j) { return j.is_string() ? j.get<std::string>() : j.dump(); }

const json* find_plugin_by_dir(const json& report, const fs::path& dir) {
  if (!report.is_object() || !report.contains("plugins")) return nullptr;
  const fs::path want = fs::weakly_canonical(dir);
  for (const json& p : report["plugins"]) {
    if (!p.contains("library") || !p["library"].is_string()) continue;
    if (fs::weakly_canonical(fs::path(p["library"].get<std::string>()).parent_path()) == want) return &p;
  }
  return nullptr;
}

const json* find_plugin(const json& report, const std::string& name) {
  if (!report.is_object() || !report.contains("plugins")) return nullptr;
  for (const json& p : report["plugins"])
    if (p.value("name", "") == name) return &p;
  return nullptr;
}

const json* find_device(const json& report, const std::string& id) {
  if (!report.is_object() || !report.contains("devices")) return nullptr;
  for (const json& d : report["devices"])
    if (d.value("id", "") == id) return &d;
  return nullptr;
}

std::vector<std::string> plugin_names_in(const json& report) {
  std::vector<std::string> out;
  if (report.is_object() && report.contains("plugins"))
    for (const json& p : report["plugins"]) out.push_back(p.value("name", "?"));
  return out;
}

std::string manifest_name(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string f = e.path().filename().string();
    if (f.size() > 12 && f.compare(f.size() - 12, 12, ".plugin.json") == 0) {
      json j = json::parse(read_file(e.path()), nullptr, false);
      if (j.is_object() && j.contains("name") && j["name"].is_string()) return j["name"];
    }
  }
  return "";
}

// --- fixture -------------------------------------------------------------------------------

void CliTest::SetUp() {
  tmp_ = std::make_unique<TempDir>();
  ASSERT_TRUE(fs::exists(host_path())) << "host executable not built: " << host_path();
}

void CliTest::TearDown() {
  const size_t left = kill_orphans();
  EXPECT_EQ(left, 0u) << "the host left " << left << " process(es) running after it exited";
  tmp_.reset();
}

Result CliTest::host(const std::vector<std::string>& args, RunOptions options) {
  if (options.cwd.empty()) options.cwd = tmp();
  // Hermetic plans: not the settings file a user keeps in ~/.config/mlhost.
  if (!options.env.count("XDG_CONFIG_HOME")) options.env["XDG_CONFIG_HOME"] = (tmp() / "xdg-config").string();
  return run_host(args, options);
}

json CliTest::probe(const std::vector<std::string>& extra, RunOptions options) {
  std::vector<std::string> args{"--probe", "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  Result r = host(args, options);
  if (r.exit_code != 0) {
    ADD_FAILURE() << "host --probe --json failed:" << r.describe();
    return json(json::value_t::discarded);
  }
  return stdout_json(r);
}

json CliTest::list_plugins(const std::vector<std::string>& extra, RunOptions options) {
  std::vector<std::string> args{"--list-plugins", "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  Result r = host(args, options);
  if (r.exit_code != 0) {
    ADD_FAILURE() << "host --list-plugins --json failed:" << r.describe();
    return json(json::value_t::discarded);
  }
  return stdout_json(r);
}

void ToyregTest::SetUp() {
  CliTest::SetUp();
  if (HasFatalFailure()) return;
  // Known at build time: a build configured without LibTorch (the sanitizer stage) has no
  // toyreg, so its tests have nothing to run; a build with LibTorch always makes it.
  if (!have_toyreg()) GTEST_SKIP() << "this build has no toyreg plugin (configured with MLH_WITH_TORCH=OFF)";
  REQUIRE_CASE("toyreg");
  toyreg_ = case_dir("toyreg").string();
}

}  // namespace mlhost::cli_test
