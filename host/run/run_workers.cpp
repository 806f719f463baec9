#include "run/run_workers.hpp"

#include "common/stop_request.hpp"

#include <csignal>
#include <cstring>
#include <fstream>
#include <memory>
#include <thread>

#include <spdlog/spdlog.h>

#include <mlh/peer_lost.hpp>

#include "common/files.hpp"
#include "plan/plan_text.hpp"
#include "run/host_log.hpp"
#include "run/crash_report.hpp"
#include "run/memory_kill.hpp"
#include "run/run_files.hpp"
#include "run/telemetry.hpp"
#include "run/worker.hpp"

namespace mlhost {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// How often the device plugin samples the worker during a run (telemetry.jsonl).
constexpr std::chrono::milliseconds kTelemetryInterval{1000};

json read_summary(const WorkerSpec& spec) {
  std::ifstream in(spec.output_dir() / "summary.json");
  return json::parse(in, nullptr, /*allow_exceptions=*/false);
}

// "rank 1 was killed by signal 9 (Killed)" / "rank 1 failed: <its error>"
std::string describe_rank_end(const WorkerSpec& spec, const WorkerOutcome& o) {
  const std::string who = "rank " + std::to_string(spec.rank);
  if (o.signal != 0) {
    if (auto crash = crash_line(spec.output_dir() / "log.txt", o.signal)) return who + " was killed by " + *crash;
    return who + " was killed by signal " + std::to_string(o.signal) + " (" + strsignal(o.signal) + ")";
  }
  const json summary = read_summary(spec);
  if (summary.is_object() && summary.value("error", json()).is_string())
    return who + " failed: " + summary["error"].get<std::string>();
  return who + " failed (exit status " + std::to_string(o.exit_code) + ")";
}

// The rank whose end ended the run: one killed by a signal the host did not send, else one
// that failed on its own rather than because a peer vanished under a collective, else the
// first that failed. -1 when none did.
int culprit(const std::vector<WorkerSpec>& specs, const GroupOutcome& group) {
  int best = -1, best_priority = 3;
  for (size_t i = 0; i < group.workers.size(); ++i) {
    const WorkerOutcome& o = group.workers[i];
    const bool stopped_by_host = std::find(group.stopped_by_host.begin(), group.stopped_by_host.end(),
                                           static_cast<int>(i)) != group.stopped_by_host.end();
    if (stopped_by_host || !o.failed()) continue;
    int priority = 2;
    if (o.signal != 0) {
      priority = 0;
    } else {
      const json summary = read_summary(specs[i]);
      const std::string error = summary.is_object() ? summary.value("error", "") : "";
      if (error.find(mlh::kPeerLostText) == std::string::npos) priority = 1;
    }
    if (priority < best_priority) {
      best = static_cast<int>(i);
      best_priority = priority;
    }
  }
  return best;
}

// A rank other than 0 started by torchrun or SLURM: rank 0's host makes the run folder and
// writes its config; wait for that rather than race it.
void wait_for_run_folder(const fs::path& run_dir, const Launch& launch) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(launch.timeout_s);
  while (!fs::exists(run_dir / "config.json")) {
    if (std::chrono::steady_clock::now() > deadline)
      throw HostError("rank " + std::to_string(launch.first_rank) + ": rank 0 did not create the run folder '" +
                      run_dir.string() + "' within " + std::to_string(launch.timeout_s) +
                      " s (do all ranks see the same folder?)");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void write_summary(const fs::path& run_dir, const json& summary) {
  write_file_atomically(run_dir / "summary.json", summary.dump(2) + "\n");
}

// The summary the worker wrote on its stop, as a preemption: status, signal, resumable.
void mark_preempted(const fs::path& run_dir, const std::string& signal) {
  std::ifstream in(run_dir / "summary.json");
  json summary = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!summary.is_object()) summary = json::object();
  summary["status"] = "preempted";
  summary["stop_signal"] = signal;
  summary["resumable"] = true;
  write_summary(run_dir, summary);
}

// The run folder before any worker starts. Rank 0's host makes it (unless resuming) and writes
// the config, plan and probe the workers read; any other host waits for that.
void set_up_run_folder(const RunJob& job, bool owns_run_dir) {
  const PlannedRun& planned = *job.planned;
  const fs::path& run_dir = job.run_dir;
  if (!owns_run_dir) {
    wait_for_run_folder(run_dir, job.launch);
    return;
  }
  if (!job.resume) {
    try {
      prepare_run_dir(run_dir, false);
    } catch (const std::exception& e) {
      throw HostError(e.what(), kExitBadInput);
    }
  }
  write_file_atomically(run_dir / "config.json", planned.config.dump(2) + "\n");
  write_file_atomically(run_dir / "plan.json", planned.plan.dump(2) + "\n");
  write_file_atomically(run_dir / "probe.json", job.probe.dump(2) + "\n");
  // The folder is this run's now: the host's lines go to its log.txt too (those logged so far
  // first), and with them the error the run may end with (main.cpp). Not before: a folder
  // refused above is left as it was.
  host_log::attach(run_dir);
  spdlog::info("run folder {}\n{}", run_dir.string(), plan_to_text(planned.plan));
}

// One spec per rank this host starts, as the plan places them.
std::vector<WorkerSpec> worker_specs(const RunJob& job) {
  const PlannedRun& planned = *job.planned;
  std::vector<WorkerSpec> specs;
  for (const WorkerPlacement& worker : planned.workers) {
    WorkerSpec spec = worker_spec(job.algorithm, planned.command, worker, planned.config, planned.plan, job.run_dir);
    spec.resume = job.resume;
    specs.push_back(std::move(spec));
  }
  return specs;
}

// The kernel's OOM kills in this cgroup before the run, to tell afterwards whether one ended it.
struct OomKillsBefore {
  fs::path memory_events = cgroup_memory_events();
  std::optional<int64_t> count = oom_kill_count(memory_events);
};

// Starts the workers and waits for their end, while the device plugin samples the first one
// into telemetry.jsonl (rank 0's host only: one file per run).
GroupOutcome supervise_with_telemetry(const RunJob& job, const std::vector<WorkerSpec>& specs, bool owns_run_dir) {
  const PlannedRun& planned = *job.planned;
  std::unique_ptr<TelemetrySampler> telemetry;
  const GroupOutcome group = supervise_workers(specs, [&](pid_t worker) {
    if (owns_run_dir)
      telemetry = std::make_unique<TelemetrySampler>(job.device_plugin, planned.workers.front().device.index, worker,
                                                     job.run_dir / "telemetry.jsonl", kTelemetryInterval);
  });
  telemetry.reset();
  if (owns_run_dir && !fs::exists(job.run_dir / "telemetry.jsonl"))
    spdlog::info("no telemetry.jsonl: device plugin '{}' gave no sample of {} during the run", job.device_plugin.name,
                 planned.workers.front().device.id());
  return group;
}

// A distributed run that a rank ended: record which and why, and throw: HostError (exit 2) when
// the rank refused its input, WorkersFailed (what --max-restarts restarts) otherwise.
[[noreturn]] void fail_distributed_run(const RunJob& job, const std::vector<WorkerSpec>& specs,
                                       const GroupOutcome& group, int failed, bool owns_run_dir) {
  const fs::path& run_dir = job.run_dir;
  const WorkerSpec& spec = specs[static_cast<size_t>(failed)];
  std::string message = describe_rank_end(spec, group.workers[static_cast<size_t>(failed)]);
  if (!group.stopped_by_host.empty()) {
    std::string stopped;
    for (int j : group.stopped_by_host)
      stopped += (stopped.empty() ? "" : ", ") + std::to_string(specs[static_cast<size_t>(j)].rank);
    message += "; stopped the other ranks here (" + stopped + ")";
  }
  if (owns_run_dir)
    write_summary(run_dir, {{"algorithm", job.algorithm.name}, {"command", job.planned->command}, {"status", "failed"},
                            {"failed_rank", spec.rank}, {"error", message}});
  // A rank that refused its input (a config or file the algorithm rejects before training)
  // is the user's to fix, not a failure a restart would get past: exit 2, as one process.
  const WorkerOutcome& end = group.workers[static_cast<size_t>(failed)];
  if (end.signal == 0 && end.exit_code == kWorkerBadInput)
    throw HostError("distributed " + specs[0].work_name() + ": " + message + "; outputs kept in " +
                        run_dir.string(),
                    kExitBadInput);
  throw WorkersFailed("distributed " + specs[0].work_name() + " failed: " + message + "; outputs kept in " + run_dir.string() + " (" +
                          (spec.output_dir() / "log.txt").string() + ")",
                      message);
}

// A stop request that came before the workers started: nothing trained, but the run may be
// started again (resumed) as it is.
int end_before_workers_started(const RunJob& job, int stop) {
  const bool preempted = is_preemption(stop);
  write_summary(job.run_dir, {{"algorithm", job.algorithm.name}, {"command", job.planned->command},
                              {"status", preempted ? "preempted" : "cancelled"}, {"stop_signal", signal_name(stop)},
                              {"resumable", true}, {"error", signal_name(stop) + " came before the workers started"}});
  spdlog::warn("{} before training started; nothing trained", signal_name(stop));
  return preempted ? kExitPreempted : kWorkerCancelled;
}

// The user stopped the run twice: a cancellation, though the worker could not save.
int end_killed_on_request(const RunJob& job) {
  write_summary(job.run_dir, {{"algorithm", job.algorithm.name}, {"command", job.planned->command}, {"status", "cancelled"},
                              {"error", "killed by a second stop request (Ctrl-C) before it finished stopping"}});
  spdlog::warn("run killed on a second stop request; outputs kept in {}", job.run_dir.string());
  return kWorkerCancelled;
}

// A worker killed by a signal could not write its summary: record how it ended, keeping what
// it wrote, with the memory hint when the kernel's OOM killer sent the SIGKILL.
[[noreturn]] void fail_killed_worker(const RunJob& job, const WorkerSpec& spec, const WorkerOutcome& outcome,
                                     const OomKillsBefore& oom_kills) {
  const PlannedRun& planned = *job.planned;
  const fs::path& run_dir = job.run_dir;
  // A crash the worker could describe says where it was (crash_report.hpp).
  const std::optional<std::string> crash = crash_line(spec.output_dir() / "log.txt", outcome.signal);
  std::string error = crash ? "worker killed by " + *crash
                            : std::string("worker killed by signal ") + std::to_string(outcome.signal) + " (" +
                                  strsignal(outcome.signal) + ")";
  if (outcome.signal == SIGKILL)
    if (auto why = memory_kill_explanation(oom_kills.count, oom_kill_count(oom_kills.memory_events),
                                           run_dir / "telemetry.jsonl", planned.plan, job.resume_command,
                                           job.algorithm.name,
                                           planned.config.is_object() && planned.config.contains("batch_size")))
      error += "; " + *why;
  write_summary(run_dir, {{"algorithm", job.algorithm.name}, {"command", planned.command}, {"status", "crashed"},
                          {"signal", outcome.signal}, {"error", error}});
  throw WorkersFailed(spec.work_name() + " " + error + "; outputs kept in " + run_dir.string() + " (log.txt)", error);
}

// The worker stopped on request, having saved where it had begun training. A preemption says
// so, and that the run is resumable.
int end_stopped_run(const RunJob& job, int stop, bool owns_run_dir) {
  const fs::path& run_dir = job.run_dir;
  if (!is_preemption(stop)) {
    spdlog::warn("run stopped on request; outputs in {}", run_dir.string());
    return kWorkerCancelled;
  }
  // The worker wrote "cancelled", having saved a checkpoint where it had begun training (a
  // stop while the ranks met has none): say it was preempted and resumable.
  if (owns_run_dir) mark_preempted(run_dir, signal_name(stop));
  spdlog::warn("run preempted ({}): {}; the same command with --resume (or --resume auto) {}; outputs in {}",
               signal_name(stop),
               holds_checkpoint(run_dir) ? "a checkpoint was saved" : "it stopped before its first checkpoint",
               holds_checkpoint(run_dir) ? "continues it" : "starts it from the beginning", run_dir.string());
  return kExitPreempted;
}

// The algorithm refused its input (exit 2, the user's to fix). A folder this launch made holds
// nothing of value yet, so it goes again and the same command works once the input is fixed.
// Input found bad after training began exits 2 as well, keeping everything.
[[noreturn]] void refuse_input(const RunJob& job, const WorkerSpec& spec, bool fresh_folder) {
  const fs::path& run_dir = job.run_dir;
  const json summary = read_summary(spec);
  const bool trained = summary.is_object() && summary.value("last_metrics", json()).is_object() &&
                       !summary["last_metrics"].empty();
  if (trained)
    throw InputFailedWhileTraining(
        spec.work_name() + " stopped on bad input" +
        (summary.value("error", json()).is_string() ? ": " + summary["error"].get<std::string>() : std::string()) +
        "; what it wrote is kept in " + run_dir.string() +
        " (log.txt, summary.json): fix what the message names, and --resume continues from the last checkpoint");
  std::string message = spec.work_name() + " refused its input" +
                        (summary.is_object() && summary.value("error", json()).is_string()
                             ? ": " + summary["error"].get<std::string>()
                             : std::string());
  if (fresh_folder && holds_only_host_records(run_dir)) {
    std::error_code ec;
    fs::remove_all(run_dir, ec);
    // The default folder's parent (runs/, default_run_dir) too, and a run's commands/ (made
    // for this command: make_command_dir), when this was all it held.
    if (!ec && (run_dir.parent_path() == "runs" || run_dir.parent_path().filename() == "commands")) {
      std::error_code holds_others;  // one with other runs or commands in it stays
      fs::remove(run_dir.parent_path(), holds_others);
    }
    message += ec ? "; nothing was trained (the run folder could not be removed: " + ec.message() + ")"
                  : "; nothing was trained, and " +
                        (run_dir.parent_path().filename() == "commands"
                             ? "this command's folder " + run_dir.string() + " is gone again (the run's own files "
                               "are as they were)"
                             : std::string("the run folder is gone again")) +
                        ": the same command runs once the input is fixed";
  } else {
    message += "; outputs kept in " + run_dir.string();
  }
  throw HostError(message, kExitBadInput);
}

// Any other failed exit: the worker's own error, from its summary, is the cause.
[[noreturn]] void fail_worker(const WorkerSpec& spec, const WorkerOutcome& outcome) {
  const json summary = read_summary(spec);
  const bool recorded = summary.is_object() && summary.value("error", json()).is_string();
  const std::string cause = recorded ? "the worker failed: " + summary["error"].get<std::string>()
                                     : "the worker failed (exit status " + std::to_string(outcome.exit_code) + ")";
  // A worker that could not write its summary (a full disk) said why on its output: point
  // there, not to a file that is not there.
  throw WorkersFailed(spec.work_name() + " failed (worker exit status " + std::to_string(outcome.exit_code) + "); " +
                          (recorded ? "see " + (spec.output_dir() / "summary.json").string()
                                    : "it could not write " + (spec.output_dir() / "summary.json").string() +
                                          ": its error is in the lines above, and in " +
                                          (spec.output_dir() / "log.txt").string() + " where that could be written"),
                      cause);
}

}  // namespace

int run_workers(const RunJob& job) {
  const Launch& launch = job.launch;
  const fs::path& run_dir = job.run_dir;

  const bool owns_run_dir = launch.first_rank == 0;  // rank 0's host; the only one unless another launcher started us
  std::error_code ec;
  // A folder this launch makes (or finds empty) holds nothing but its own records until the
  // algorithm writes: if the algorithm refuses its input, the folder goes again.
  const bool fresh_folder = owns_run_dir && !job.resume && (!fs::exists(run_dir, ec) || fs::is_empty(run_dir, ec));
  set_up_run_folder(job, owns_run_dir);

  const std::vector<WorkerSpec> specs = worker_specs(job);
  if (launch.distributed())
    spdlog::info("starting ranks {}-{} of {} ({}), meeting at {}:{}", launch.first_rank,
                 launch.first_rank + launch.workers_here - 1, launch.world_size, launch.source, launch.master_addr,
                 launch.master_port);
  const OomKillsBefore oom_kills;
  const GroupOutcome group = supervise_with_telemetry(job, specs, owns_run_dir);

  if (launch.distributed() && !group.killed_on_request)
    if (const int failed = culprit(specs, group); failed >= 0) fail_distributed_run(job, specs, group, failed, owns_run_dir);
  const int stop = first_stop_signal();
  if (group.not_started) return end_before_workers_started(job, stop);
  const WorkerOutcome& outcome = group.workers[0];  // this machine's first rank speaks for the run
  if (group.killed_on_request) return end_killed_on_request(job);
  if (outcome.signal != 0) fail_killed_worker(job, specs[0], outcome, oom_kills);
  if (outcome.exit_code == kWorkerCancelled) return end_stopped_run(job, stop, owns_run_dir);
  if (outcome.exit_code == kWorkerBadInput && !launch.distributed()) refuse_input(job, specs[0], fresh_folder);
  if (outcome.exit_code != kWorkerCompleted) fail_worker(specs[0], outcome);
  spdlog::info("run completed; outputs in {}", run_dir.string());
  return 0;
}

}  // namespace mlhost
