#include "worker.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <optional>
#include <cstdio>
#include <cstring>
#include <memory>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "plugin_loader.hpp"
#include "run_files.hpp"
#include "run_sink.hpp"

namespace mlhost {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

volatile sig_atomic_t g_stop_requested = 0;
volatile sig_atomic_t g_host_signals = 0;

void on_worker_signal(int) { g_stop_requested = 1; }

// In the host: the first SIGINT/SIGTERM/SIGHUP asks the workers to stop, a second one kills them.

extern "C" {
void cb_log(void* d, int32_t level, const char* m) { static_cast<RunSink*>(d)->log(level, m); }
void cb_metric(void* d, const char* n, double v, int64_t s) { static_cast<RunSink*>(d)->metric(n, v, s); }
void cb_progress(void* d, int64_t done, int64_t total, const char* u) {
  static_cast<RunSink*>(d)->progress(done, total, u);
}
int32_t cb_should_stop(void*) { return g_stop_requested ? 1 : 0; }
void cb_summary(void* d, const char* j) { static_cast<RunSink*>(d)->summary(j); }
}

}  // namespace

int worker_main(const WorkerSpec& spec) {
  struct sigaction sa {};
  sa.sa_handler = on_worker_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);

  std::unique_ptr<RunSink> sink;
  json summary = {{"algorithm", spec.algorithm.name}, {"command", spec.command}};
  int code = kWorkerFailed;
  try {
    std::filesystem::create_directories(spec.output_dir());
    sink = std::make_unique<RunSink>(spec.output_dir(), spec.rank == 0,
                                     spec.world_size > 1 ? "[rank " + std::to_string(spec.rank) + "] " : "");
    LoadedPlugin plugin = load_plugin(spec.algorithm);
    const mlh_algorithm_plugin* table = plugin.algorithm_table();
    PluginInstance<mlh_algorithm_plugin> instance(table, spec.algorithm.name);

    mlh_host_callbacks callbacks{sizeof(mlh_host_callbacks), sink.get(), cb_log, cb_metric,
                                 cb_progress, cb_should_stop, cb_summary};
    const std::string run_dir = spec.run_dir.string();
    mlh_run_context ctx{};
    ctx.struct_size = sizeof ctx;
    ctx.command = spec.command.c_str();
    ctx.config_json = spec.config_json.c_str();
    ctx.device_json = spec.device_json.c_str();
    ctx.torch_device = spec.torch_device.c_str();
    ctx.plan_json = spec.plan_json.c_str();
    ctx.run_dir = run_dir.c_str();
    ctx.resume = spec.resume ? 1 : 0;
    ctx.rank = spec.rank;
    ctx.world_size = spec.world_size;
    ctx.local_rank = spec.local_rank;
    ctx.host = &callbacks;

    mlh_error err = make_error();
    const mlh_status status = table->run(instance.get(), &ctx, &err);
    if (status == MLH_OK) {
      summary["status"] = "completed";
      code = kWorkerCompleted;
    } else if (status == MLH_ERR_CANCELLED) {
      summary["status"] = "cancelled";
      summary["error"] = describe_error(status, err);
      code = kWorkerCancelled;
    } else {
      summary["status"] = "failed";
      summary["error"] = describe_error(status, err);
    }
  } catch (const std::exception& e) {
    summary["status"] = "failed";
    summary["error"] = e.what();
  }
  if (sink) {
    summary["result"] = sink->result();
    summary["last_metrics"] = sink->last_metrics();
    summary["elapsed_seconds"] = sink->seconds();
  }
  try {
    write_file_atomically(spec.output_dir() / "summary.json", summary.dump(2) + "\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
  }
  if (code == kWorkerFailed && summary.contains("error"))
    std::fprintf(stderr, "%straining failed: %s\n",
                 spec.world_size > 1 ? ("[rank " + std::to_string(spec.rank) + "] ").c_str() : "",
                 summary["error"].get<std::string>().c_str());
  std::fflush(nullptr);
  return code;
}

namespace {

// Every worker of the running group, for the signal handler (fixed size: no allocation there).
constexpr int kMaxWorkers = 1024;
volatile sig_atomic_t g_worker_pids[kMaxWorkers];
volatile sig_atomic_t g_worker_count = 0;

void on_host_group_signal(int) {
  ++g_host_signals;
  for (int i = 0; i < g_worker_count; ++i)
    if (g_worker_pids[i] > 0) ::kill(g_worker_pids[i], g_host_signals == 1 ? SIGINT : SIGKILL);
}

WorkerOutcome outcome_of(int status) {
  WorkerOutcome out;
  if (WIFEXITED(status)) out.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) out.signal = WTERMSIG(status);
  return out;
}

// How long the other workers of a group may take to end by themselves after one failed.
constexpr std::chrono::milliseconds kFailureGrace{3000};


}  // namespace

fs::path WorkerSpec::output_dir() const {
  return rank == 0 ? run_dir : run_dir / "ranks" / std::to_string(rank);
}

GroupOutcome supervise_workers(const std::vector<WorkerSpec>& specs, const std::function<void(pid_t)>& started) {
  if (specs.empty() || specs.size() > static_cast<size_t>(kMaxWorkers))
    throw std::runtime_error("cannot start " + std::to_string(specs.size()) + " workers (1 to " +
                             std::to_string(kMaxWorkers) + ")");
  std::fflush(nullptr);
  const pid_t host = ::getpid();
  g_host_signals = 0;
  g_worker_count = 0;
  struct sigaction sa {}, old_int{}, old_term{}, old_hup{};
  sa.sa_handler = on_host_group_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &old_int);
  ::sigaction(SIGTERM, &sa, &old_term);
  ::sigaction(SIGHUP, &sa, &old_hup);

  std::vector<pid_t> pids;
  for (const WorkerSpec& spec : specs) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      for (pid_t p : pids) ::kill(-p, SIGKILL);
      throw std::runtime_error(std::string("cannot start the training worker: ") + std::strerror(errno));
    }
    if (pid == 0) {
      ::setpgid(0, 0);  // its own group: a terminal Ctrl-C reaches the host, which passes it on once
      // Nobody would supervise a worker whose host died (kill -9, closed terminal): die too.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != host) ::_exit(kWorkerFailed);
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      ::sigaction(SIGHUP, &dfl, nullptr);
      for (const auto& [name, value] : spec.environment) ::setenv(name.c_str(), value.c_str(), 1);
      // ps and top tell the ranks apart.
      if (spec.world_size > 1) ::prctl(PR_SET_NAME, ("host-rank" + std::to_string(spec.rank)).c_str());
      ::_exit(worker_main(spec));
    }
    ::setpgid(pid, pid);
    pids.push_back(pid);
    g_worker_pids[g_worker_count] = pid;
    g_worker_count = g_worker_count + 1;
  }
  if (started) started(pids[0]);

  GroupOutcome out;
  out.workers.resize(specs.size());
  std::vector<bool> running(specs.size(), true);
  size_t left = specs.size();
  // After a worker fails, the others get a moment to end by themselves (they see the lost
  // peer in their next collective, and write their own summaries); then they are killed.
  std::optional<std::chrono::steady_clock::time_point> kill_at;
  while (left > 0) {
    // Only our own children: the telemetry sampler is a child too, and reaps its own.
    int status = 0;
    size_t i = 0;
    for (; i < pids.size(); ++i)
      if (running[i] && ::waitpid(pids[i], &status, WNOHANG) == pids[i]) break;
    if (i == pids.size()) {
      if (kill_at && std::chrono::steady_clock::now() >= *kill_at) {
        for (size_t j = 0; j < pids.size(); ++j)
          if (running[j]) {
            ::kill(-pids[j], SIGKILL);
            out.stopped_by_host.push_back(static_cast<int>(j));
          }
        kill_at.reset();
      }
      ::usleep(20000);
      continue;
    }
    const pid_t pid = pids[i];
    running[i] = false;
    --left;
    g_worker_pids[i] = 0;
    ::kill(-pid, SIGKILL);  // anything the plugin left running in the worker's group
    out.workers[i] = outcome_of(status);
    if (out.workers[i].failed() && !kill_at && out.stopped_by_host.empty() && left > 0 && g_host_signals < 2) {
      kill_at = std::chrono::steady_clock::now() + kFailureGrace;
    }
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  ::sigaction(SIGHUP, &old_hup, nullptr);
  g_worker_count = 0;
  out.killed_on_request = g_host_signals > 1;
  return out;
}

}  // namespace mlhost
