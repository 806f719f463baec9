#include "run/worker.hpp"

#include "common/stop_request.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>

#include <mlh/plan_fields.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "plugins/plugin_loader.hpp"
#include "common/files.hpp"
#include "run/crash_report.hpp"
#include "run/run_sink.hpp"

namespace mlhost {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

volatile sig_atomic_t g_stop_requested = 0;
volatile sig_atomic_t g_host_signals = 0;

void on_worker_signal(int) { g_stop_requested = 1; }

// The signal that preempts besides SIGTERM, from the host (MLH_PREEMPT_SIGNAL): it must stop
// the worker at a step boundary too, not end it as its default action would.
int worker_preemption_signal() {
  const char* v = std::getenv("MLH_PREEMPT_SIGNAL");
  const int sig = v ? std::atoi(v) : 0;
  return sig > 0 && sig < NSIG ? sig : 0;
}

// In the host: the first SIGINT/SIGTERM/SIGHUP asks the workers to stop, a second one kills them.

extern "C" {
void cb_log(void* d, int32_t level, const char* m) { static_cast<RunSink*>(d)->log(level, m); }
void cb_metric(void* d, const char* n, double v, int64_t s) { static_cast<RunSink*>(d)->metric(n, v, s); }
void cb_progress(void* d, int64_t done, int64_t total, const char* u) {
  note_crash_progress(done, u);
  static_cast<RunSink*>(d)->progress(done, total, u);
}
int32_t cb_should_stop(void*) { return g_stop_requested ? 1 : 0; }
void cb_summary(void* d, const char* j) { static_cast<RunSink*>(d)->summary(j); }
}

json run_hparams(const WorkerSpec& spec) {
  json hparams = flatten_hparams(json::parse(spec.config_json, nullptr, false));
  const json plan = json::parse(spec.plan_json, nullptr, false);
  hparams["algorithm"] = spec.algorithm.name;
  hparams["device"] = spec.torch_device;
  hparams["world_size"] = spec.world_size;
  if (plan.is_object())
    for (const mlh::PlanFieldInfo& f : mlh::kPlanFields)
      if (f.run_parameter == mlh::RunParameter::kYes && plan.contains(f.name) && !plan[f.name].is_null())
        hparams[std::string("plan.") + f.name] = plan[f.name];
  return hparams;
}

}  // namespace

int worker_main(const WorkerSpec& spec) {
  struct sigaction sa {};
  sa.sa_handler = on_worker_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  if (const int preempt = worker_preemption_signal()) ::sigaction(preempt, &sa, nullptr);

  std::unique_ptr<RunSink> sink;
  // A training run's hyperparameters and status (rank 0's), for TensorBoard's HParams table of
  // runs: the config as the algorithm got it, and the plan's device, precision and batch.
  const bool hparams_run = spec.rank == 0 && (spec.command.empty() || spec.command == "train");
  json summary = {{"algorithm", spec.algorithm.name}, {"command", spec.command}};
  int code = kWorkerFailed;
  try {
    std::filesystem::create_directories(spec.output_dir());
    sink = std::make_unique<RunSink>(spec.output_dir(), spec.rank == 0 && !spec.quiet,
                                     spec.world_size > 1 ? "[rank " + std::to_string(spec.rank) + "] " : "",
                                     spec.resume);
    if (hparams_run) sink->hparams_start(run_hparams(spec));
    install_crash_report(spec.output_dir() / "log.txt");
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
      // Bad input, like a config error the host finds, whenever it is found: refused before
      // training (no metric yet), or met while training (an environment's NaN observation).
      // Its exit status does not depend on when (run_workers.cpp says which it was).
      if (status == MLH_ERR_INVALID_ARGUMENT) code = kWorkerBadInput;
    }
  } catch (const std::exception& e) {
    summary["status"] = "failed";
    summary["error"] = e.what();
  }
  summary["worker"] = {{"pid", ::getpid()}, {"allocator", worker_allocator()}};
  // A run ended by --max-steps is complete only as far as that step: a later --resume without
  // it trains on to the end of the config (cli/run_setup.cpp reads this).
  const json plan = json::parse(spec.plan_json, nullptr, false);
  if (plan.is_object() && plan.contains("max_steps") && plan["max_steps"].is_number_integer())
    summary["max_steps"] = plan["max_steps"];
  if (sink && hparams_run) {
    try {
      // HParams has no "stopped": a run stopped on request or preempted reads as unknown
      // (neither a success nor a failure) until a resume ends it.
      sink->hparams_end(code == kWorkerCompleted   ? HparamsStatus::kSuccess
                        : code == kWorkerCancelled ? HparamsStatus::kUnknown
                                                   : HparamsStatus::kFailure);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
    }
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
  // A refused input of a one-process run is the host's to report (run_workers.cpp, with what
  // became of the run folder): said here too, the user would read it twice.
  // The run's log holds the error that ended it, beside its other lines.
  if (sink && code == kWorkerFailed && summary.contains("error"))
    sink->record(MLH_LOG_ERROR, spec.work_name() + " failed: " + summary["error"].get<std::string>());
  if ((code == kWorkerFailed || (code == kWorkerBadInput && spec.world_size > 1)) && summary.contains("error"))
    std::fprintf(stderr, "%s%s failed: %s\n",
                 spec.world_size > 1 ? ("[rank " + std::to_string(spec.rank) + "] ").c_str() : "",
                 spec.work_name().c_str(), summary["error"].get<std::string>().c_str());
  std::fflush(nullptr);
  return code;
}

WorkerSpec worker_spec(const PluginManifest& algorithm, const std::string& command, const WorkerPlacement& worker,
                       const json& config, const json& plan, const fs::path& run_dir) {
  WorkerSpec spec;
  spec.algorithm = algorithm;
  spec.command = command;
  spec.config_json = config.dump();
  spec.device_json = device_to_json(worker.device).dump();
  spec.torch_device = worker.torch_device;
  spec.plan_json = plan.dump();
  spec.environment = worker.environment;
  spec.run_dir = run_dir;
  spec.rank = worker.rank;
  spec.local_rank = worker.local_rank;
  spec.world_size = worker.world_size;
  return spec;
}

json worker_spec_to_json(const WorkerSpec& spec) {
  return {{"manifest", spec.algorithm.manifest_path.string()},
          {"library", spec.algorithm.library_path.string()},
          {"command", spec.command},
          {"config_json", spec.config_json},
          {"device_json", spec.device_json},
          {"torch_device", spec.torch_device},
          {"plan_json", spec.plan_json},
          {"run_dir", spec.run_dir.string()},
          {"resume", spec.resume},
          {"rank", spec.rank},
          {"world_size", spec.world_size},
          {"local_rank", spec.local_rank},
          {"quiet", spec.quiet},
          {"log_level", std::string(spdlog::level::to_string_view(spdlog::get_level()).data())}};
}

WorkerSpec worker_spec_from_json(const json& j) {
  WorkerSpec spec;
  try {
    spec.algorithm = read_manifest(j.at("manifest").get<std::string>());
    if (spec.algorithm.library_path.string() != j.at("library").get<std::string>())
      throw std::runtime_error("the manifest '" + spec.algorithm.manifest_path.string() +
                               "' names another library than when the host read it");
    spec.command = j.at("command").get<std::string>();
    spec.config_json = j.at("config_json").get<std::string>();
    spec.device_json = j.at("device_json").get<std::string>();
    spec.torch_device = j.at("torch_device").get<std::string>();
    spec.plan_json = j.at("plan_json").get<std::string>();
    spec.run_dir = j.at("run_dir").get<std::string>();
    spec.resume = j.at("resume").get<bool>();
    spec.rank = j.at("rank").get<int>();
    spec.world_size = j.at("world_size").get<int>();
    spec.local_rank = j.at("local_rank").get<int>();
    spec.quiet = j.at("quiet").get<bool>();
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("the worker's spec does not fit: ") + e.what());
  } catch (const ManifestError& e) {
    throw std::runtime_error(e.what());
  }
  return spec;
}

int worker_program(const char* fd_text) {
  try {
    char* end = nullptr;
    const long fd = std::strtol(fd_text, &end, 10);
    if (!end || *end != '\0' || fd < 0) throw std::runtime_error(std::string("bad descriptor '") + fd_text + "'");
    std::string text;
    char buf[65536];
    for (ssize_t n; (n = ::read(static_cast<int>(fd), buf, sizeof buf)) != 0;) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw std::runtime_error(std::string("cannot read the worker's spec: ") + std::strerror(errno));
      text.append(buf, static_cast<size_t>(n));
    }
    ::close(static_cast<int>(fd));
    const json j = json::parse(text);
    const WorkerSpec spec = worker_spec_from_json(j);
    spdlog::set_level(spdlog::level::from_str(j.value("log_level", "info")));
    // ps and top tell the ranks apart.
    if (spec.world_size > 1) ::prctl(PR_SET_NAME, ("host-rank" + std::to_string(spec.rank)).c_str());
    return worker_main(spec);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "host: the training worker could not start: %s\n", e.what());
    return kWorkerFailed;
  }
}

std::string worker_allocator() {
  std::ifstream maps("/proc/self/maps");
  std::string line, name = "glibc";
  while (std::getline(maps, line)) {
    if (line.find("/libjemalloc") != std::string::npos) return "jemalloc";
    if (line.find("/libtcmalloc") != std::string::npos) return "tcmalloc";
  }
  if (const char* tunables = std::getenv("GLIBC_TUNABLES"); tunables && std::strstr(tunables, "glibc.malloc."))
    name += std::string(" (GLIBC_TUNABLES=") + tunables + ")";
  return name;
}

namespace {

// Starts the worker program in the child after fork(): the host's own executable, exec'd
// with the spec (its JSON text, made before the fork) in an anonymous memory file: no size
// limit, nothing left on disk. Returns only if that fails.
void exec_worker(const std::string& host_program, const std::string& text) {
  const int fd = ::memfd_create("mlhost-worker-spec", 0);  // no MFD_CLOEXEC: the worker reads it
  if (fd < 0) return;
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
  if (::lseek(fd, 0, SEEK_SET) != 0) return;
  const std::string fd_text = std::to_string(fd);
  const char* argv[] = {host_program.c_str(), kWorkerSpecFlag, fd_text.c_str(), nullptr};
  ::execv(host_program.c_str(), const_cast<char* const*>(argv));
}

}  // namespace

namespace {

// Every worker of the running group, for the signal handler (fixed size: no allocation there).
constexpr int kMaxWorkers = 1024;
volatile sig_atomic_t g_worker_pids[kMaxWorkers];
volatile sig_atomic_t g_worker_count = 0;

void on_host_group_signal(int sig) {
  record_stop_signal(sig);
  // Only a repeated interactive stop (Ctrl-C, SIGHUP) kills the workers before they save. A
  // preemption signal can reach this host twice for one stop (SLURM signals every process of
  // a job step, and a sweep passes its stop on to the trial it runs), and a preempted run
  // must get to write its checkpoint; the scheduler's own SIGKILL ends it otherwise.
  if (is_preemption(sig) && g_host_signals > 0) return;
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

GroupOutcome supervise_workers(const std::vector<WorkerSpec>& specs, const std::function<void(pid_t)>& started,
                               std::optional<std::chrono::steady_clock::time_point> deadline) {
  if (specs.empty() || specs.size() > static_cast<size_t>(kMaxWorkers))
    throw std::runtime_error("cannot start " + std::to_string(specs.size()) + " workers (1 to " +
                             std::to_string(kMaxWorkers) + ")");
  std::fflush(nullptr);
  const pid_t host = ::getpid();
  g_host_signals = 0;
  g_worker_count = 0;
  struct sigaction sa {}, old_int{}, old_term{}, old_hup{}, old_preempt{};
  sa.sa_handler = on_host_group_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &old_int);
  ::sigaction(SIGTERM, &sa, &old_term);
  ::sigaction(SIGHUP, &sa, &old_hup);
  const int preempt = preemption_signal();
  if (preempt != 0) ::sigaction(preempt, &sa, &old_preempt);
  auto restore_signals = [&] {
    ::sigaction(SIGINT, &old_int, nullptr);
    ::sigaction(SIGTERM, &old_term, nullptr);
    ::sigaction(SIGHUP, &old_hup, nullptr);
    if (preempt != 0) ::sigaction(preempt, &old_preempt, nullptr);
  };
  // A stop asked for earlier (while planning, or during a calibration worker before this one)
  // is not forgotten: nothing more starts.
  if (first_stop_signal() != 0) {
    restore_signals();
    GroupOutcome stopped;
    stopped.not_started = true;
    return stopped;
  }

  // The worker program: this very executable (the host), started afresh.
  std::error_code ec;
  const std::string host_program = fs::read_symlink("/proc/self/exe", ec).string();
  if (ec) throw std::runtime_error("cannot find the host's own program (/proc/self/exe): " + ec.message());

  std::vector<std::string> spec_texts;
  for (const WorkerSpec& spec : specs) spec_texts.push_back(worker_spec_to_json(spec).dump());

  std::vector<pid_t> pids;
  for (size_t w = 0; w < specs.size(); ++w) {
    const WorkerSpec& spec = specs[w];
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
      exec_worker(host_program, spec_texts[w]);
      std::fprintf(stderr, "host: cannot start the training worker %s: %s\n", host_program.c_str(), std::strerror(errno));
      ::_exit(kWorkerFailed);
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
  bool abandoned = false;
  while (left > 0) {
    // Only our own children: the telemetry sampler is a child too, and reaps its own.
    int status = 0;
    size_t i = 0;
    for (; i < pids.size(); ++i)
      if (running[i] && ::waitpid(pids[i], &status, WNOHANG) == pids[i]) break;
    if (i == pids.size()) {
      if (!abandoned && first_stop_signal() != 0) {  // seen within one poll, 20 ms
        abandoned = true;
        for (size_t j = 0; j < pids.size(); ++j)
          if (running[j] && specs[j].abandon_on_stop) ::kill(-pids[j], SIGKILL);
      }
      if (deadline && !out.timed_out && std::chrono::steady_clock::now() >= *deadline) {
        for (size_t j = 0; j < pids.size(); ++j)
          if (running[j]) ::kill(-pids[j], SIGKILL);
        out.timed_out = true;
      }
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
  restore_signals();
  g_worker_count = 0;
  out.killed_on_request = g_host_signals > 1;
  return out;
}

}  // namespace mlhost
