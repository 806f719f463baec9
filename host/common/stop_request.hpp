// Stop requests to the host, whatever stage is running when one comes. SIGINT (Ctrl-C) and
// SIGHUP cancel a run (exit 130); SIGTERM and the preemption signal (--preempt-signal, e.g.
// USR1 for SLURM's --signal=USR1@120) preempt it: every rank saves a checkpoint at its next
// step boundary, summary.json says "preempted", and the host exits with kExitPreempted, so
// that a requeued job running the same command (--resume auto) continues from there.
// The first request is kept for the whole command: one that comes while the host is still
// planning (probing, calibrating, seeking the batch) stops the run before it trains.
#pragma once

#include <string>

namespace mlhost {

constexpr int kExitCancelled = 130;
constexpr int kExitPreempted = 75;  // EX_TEMPFAIL: "try again later"

// Async-signal-safe: called from the host's signal handlers.
void record_stop_signal(int sig) noexcept;
// The first stop signal received, 0 when none has come.
int first_stop_signal() noexcept;

// The extra signal that preempts (0: only SIGTERM). Set once at start, from --preempt-signal.
void set_preemption_signal(int sig) noexcept;
int preemption_signal() noexcept;
bool is_preemption(int sig) noexcept;

// "SIGTERM", "SIGUSR1", ...
std::string signal_name(int sig);
// A signal from "USR1", "SIGUSR1" or "10"; 0 when it names none a job could be sent.
int parse_signal(const std::string& text);

// Installs the recording handler for SIGINT, SIGTERM, SIGHUP and the preemption signal: the
// host's state between the stages that handle signals themselves (planning, probing).
void record_stop_signals();
// Whether SIGTERM now runs the recording handler: the host is in a command that acts on stop
// requests at its stages' boundaries (a run, --calibrate, a sweep).
bool stop_signals_recorded();

}  // namespace mlhost
