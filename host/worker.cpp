#include "worker.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
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
volatile sig_atomic_t g_worker_pid = 0;
volatile sig_atomic_t g_host_signals = 0;

void on_worker_signal(int) { g_stop_requested = 1; }

// In the host: the first SIGINT/SIGTERM/SIGHUP asks the worker to stop, a second one kills it.
void on_host_signal(int) {
  ++g_host_signals;
  if (g_worker_pid > 0) ::kill(g_worker_pid, g_host_signals == 1 ? SIGINT : SIGKILL);
}

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
    sink = std::make_unique<RunSink>(spec.run_dir);
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
    ctx.rank = 0;
    ctx.world_size = 1;
    ctx.local_rank = 0;
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
    write_file_atomically(spec.run_dir / "summary.json", summary.dump(2) + "\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
  }
  if (code == kWorkerFailed && summary.contains("error"))
    std::fprintf(stderr, "training failed: %s\n", summary["error"].get<std::string>().c_str());
  std::fflush(nullptr);
  return code;
}

WorkerOutcome supervise_worker(const WorkerSpec& spec, const std::function<void(pid_t)>& started) {
  std::fflush(nullptr);
  const pid_t host = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("cannot start the training worker: ") + std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);  // its own group: a terminal Ctrl-C reaches the host, which passes it on once
    // Nobody would supervise a worker whose host died (kill -9, closed terminal): die too.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != host) ::_exit(kWorkerFailed);
    ::_exit(worker_main(spec));
  }
  ::setpgid(pid, pid);
  g_worker_pid = pid;
  g_host_signals = 0;
  struct sigaction sa {}, old_int{}, old_term{}, old_hup{};
  sa.sa_handler = on_host_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &old_int);
  ::sigaction(SIGTERM, &sa, &old_term);
  ::sigaction(SIGHUP, &sa, &old_hup);
  if (started) started(pid);

  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  ::sigaction(SIGHUP, &old_hup, nullptr);
  g_worker_pid = 0;
  ::kill(-pid, SIGKILL);  // anything the plugin left running in the worker's group

  WorkerOutcome out;
  out.interrupted = g_host_signals > 0;
  out.killed_on_request = g_host_signals > 1;
  if (WIFEXITED(status)) out.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) out.signal = WTERMSIG(status);
  return out;
}

}  // namespace mlhost
