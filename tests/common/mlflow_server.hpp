// A real MLflow tracking server for tests (`mlflow server` with a SQLite store and the
// artifact proxy, its default, in a temporary folder), and MLflow's own Python client reading
// a run back (tests/tracking/python/mlflow_read_run.py).
//
// The mlflow program is the repository's .venv/bin/mlflow (scripts/torch-venv.sh installs it
// with scripts/py-peers.txt), or the one MLH_TEST_MLFLOW names, e.g. from
//   python3 -m venv /tmp/mlflowvenv && /tmp/mlflowvenv/bin/pip install mlflow
//   MLH_TEST_MLFLOW=/tmp/mlflowvenv/bin/mlflow ctest ...
// The python beside it reads runs back. Without one, the tests that need it skip.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace mlflow_test {

inline std::filesystem::path mlflow_program(const std::filesystem::path& source_dir) {
  if (const char* e = std::getenv("MLH_TEST_MLFLOW"); e && *e) return e;
  return source_dir / ".venv" / "bin" / "mlflow";
}

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The processes descended from `root` now (by /proc's parent pids), deepest last.
inline std::vector<pid_t> descendants(pid_t root) {
  std::vector<std::pair<pid_t, pid_t>> parent_of;  // (pid, ppid)
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), {});
    const size_t close = text.rfind(')');  // the command name may hold spaces and parentheses
    if (close == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(text.c_str() + close + 1, " %c %d", &state, &ppid) == 2)
      parent_of.emplace_back(static_cast<pid_t>(std::stoi(name)), static_cast<pid_t>(ppid));
  }
  std::vector<pid_t> found{root};
  for (size_t i = 0; i < found.size(); ++i)
    for (const auto& [pid, ppid] : parent_of)
      if (ppid == found[i]) found.push_back(pid);
  found.erase(found.begin());
  return found;
}

// A child process in its own process group, its output in a log file. When the object goes,
// the group and every process descended from the child are stopped: mlflow's server starts
// its web workers and job consumers in sessions of their own, which a signal to the group
// misses and which would outlive the test, holding their ports and folders.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::filesystem::path& log) {
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // a test binary killed by ctest's timeout takes it along
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
  }
  ~Child() {
    if (pid_ <= 0) return;
    const std::vector<pid_t> others = descendants(pid_);
    for (pid_t p : others) ::kill(p, SIGTERM);
    ::kill(-pid_, SIGTERM);
    // The whole group gone, every member reaped: a test process that is a child subreaper
    // (the CLI tests) inherits the server's workers and counts those left as leaks.
    for (int i = 0; i < 150 && ::kill(-pid_, 0) == 0; ++i) {
      while (::waitpid(-pid_, nullptr, WNOHANG) > 0) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ::kill(-pid_, SIGKILL);
    while (::waitpid(-pid_, nullptr, 0) > 0) {
    }
    // Those outside the group: given the same time to stop, then killed. (A pid reused since
    // is not one of theirs only if its parent changed; they were ours a moment ago.)
    for (int i = 0; i < 50; ++i) {
      bool any = false;
      for (pid_t p : others) {
        if (::waitpid(p, nullptr, WNOHANG) == p) continue;  // ours (a subreaper's), now reaped
        any = any || ::kill(p, 0) == 0;
      }
      if (!any) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    for (pid_t p : others) ::kill(p, SIGKILL);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  bool running() const { return pid_ > 0 && ::waitpid(pid_, nullptr, WNOHANG) == 0; }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

inline bool accepts_connections(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

class Server {
 public:
  Server(const std::filesystem::path& program, const std::filesystem::path& dir, int port)
      : port_(port), uri_("http://127.0.0.1:" + std::to_string(port)), log_(dir / "server.log") {
    std::filesystem::create_directories(dir);
    child_ = std::make_unique<Child>(
        std::vector<std::string>{program.string(), "server", "--backend-store-uri",
                                 "sqlite:///" + (dir / "mlflow.db").string(), "--artifacts-destination",
                                 (dir / "artifacts").string(), "--host", "127.0.0.1", "--port", std::to_string(port),
                                 "--workers", "1"},
        log_);
  }
  // "" once it listens (a first start makes its database: tens of seconds on a busy machine),
  // else why not, with its log.
  std::string wait_ready() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
    while (std::chrono::steady_clock::now() < deadline) {
      if (!child_->running()) return "mlflow server exited:\n" + read_text(log_);
      if (accepts_connections(port_)) return "";
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    return "mlflow server did not listen within 90 s:\n" + read_text(log_);
  }
  const std::string& uri() const { return uri_; }
  // The server's processes now: `mlflow server` and everything it started.
  std::vector<pid_t> processes() const {
    std::vector<pid_t> all = descendants(child_->pid());
    all.insert(all.begin(), child_->pid());
    return all;
  }

 private:
  int port_;
  std::string uri_;
  std::filesystem::path log_;
  std::unique_ptr<Child> child_;
};

// Whether `pid` is a process that has not ended (a zombie has).
inline bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), {});
  const size_t close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

// The run as MLflow's Python client sees it (mlflow_read_run.py's JSON); a discarded value
// when the script failed.
inline nlohmann::json read_back(const std::filesystem::path& program, const std::filesystem::path& script,
                                const std::string& uri, const std::string& run_id) {
  const std::filesystem::path python = program.parent_path() / "python";
  const std::string cmd = "'" + python.string() + "' '" + script.string() + "' '" + uri + "' '" + run_id + "'";
  std::unique_ptr<FILE, int (*)(FILE*)> p(::popen(cmd.c_str(), "r"), ::pclose);
  if (!p) return nlohmann::json::value_t::discarded;
  std::string out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p.get())) out.append(buf, n);
  return nlohmann::json::parse(out, nullptr, false);
}

}  // namespace mlflow_test
