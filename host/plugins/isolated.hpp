// Running plugin code in child processes, so that a plugin that crashes, hangs, aborts or
// throws cannot take the host down. Used for probing (all device plugins in parallel),
// describing algorithms and preparing a device.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace mlhost {

// A job runs in the child and returns the text to send back to the parent (JSON, by
// convention). If it throws, the child writes the exception to stderr and exits with 3.
using IsolatedJob = std::function<std::string()>;

struct IsolatedOutcome {
  enum class Status { kOk, kExited, kSignaled, kTimedOut, kSpawnFailed };
  Status status = Status::kSpawnFailed;
  std::string payload;      // what the job returned (kOk only)
  int exit_code = 0;        // kExited: the child's exit status
  int signal = 0;           // kSignaled: the signal that ended it
  std::string stderr_tail;  // the last lines the child wrote to stderr
  double elapsed_ms = 0;

  bool ok() const { return status == Status::kOk; }
  // Why the job produced no payload, in words ("crashed with signal 11 (Segmentation
  // fault)", "did not finish within 500 ms", ...), followed by the stderr tail.
  std::string failure_reason() const;
};

// Runs every job in its own child process, all at once, and waits for each up to
// `timeout` (measured from the start). Children still running then are killed with their
// process groups. Results are in the order of `jobs`.
std::vector<IsolatedOutcome> run_isolated(const std::vector<IsolatedJob>& jobs, std::chrono::milliseconds timeout);

}  // namespace mlhost
