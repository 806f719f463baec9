// Files of a run directory: created safely, written atomically, never silently replaced.
#pragma once

#include <filesystem>
#include <string>

namespace mlhost {

// Makes the run folder. A new run refuses a folder that already holds files (they would
// be overwritten); a resumed run needs the folder to exist. `command_on_trained_run` (eval,
// solve, ...: a command on the run, not its training) changes the advice for a missing run:
// name the folder training wrote, as --resume auto would start a new run there instead.
// Throws std::runtime_error.
void prepare_run_dir(const std::filesystem::path& dir, bool resume, const std::string& command_on_trained_run = {});

// Whether `dir` holds a run (its config.json), for --resume auto.
bool holds_run(const std::filesystem::path& dir);

// A new folder of its own for a command run on the trained run in `run_dir` (eval, classify,
// play, ...): run_dir/commands/<command>-<N>, N the first number free (made atomically, so
// commands started at once get different folders). The run's own files are never touched.
// Throws std::runtime_error.
std::filesystem::path make_command_dir(const std::filesystem::path& run_dir, const std::string& command);

// Whether `dir` holds only what the host and the worker write for every run (its records, the
// log, the metrics), nothing the algorithm made: no checkpoint, weights or result file.
bool holds_only_host_records(const std::filesystem::path& dir);

// Whether `dir` holds a checkpoint to resume from (a file in its checkpoints/ folder).
bool holds_checkpoint(const std::filesystem::path& dir);

// runs/<algorithm>-<YYYYmmdd-HHMMSS> under the current folder.
std::filesystem::path default_run_dir(const std::string& algorithm);

}  // namespace mlhost
