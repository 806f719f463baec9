// The host's own lines about a run (its plan, a setting changed on --resume, restarts,
// tracking, the error it ends with) go to the terminal and into the run's log.txt, beside the
// worker's lines, so that the log holds what the terminal showed. Lines logged before the run's
// folder exists are kept and written first, once it does.
#pragma once

#include <filesystem>
#include <string>

namespace mlhost::host_log {

// Adds the run-log sink to the default logger (main.cpp, after the terminal's pattern is set);
// until attach() it keeps the lines in memory.
void install();

// From now on the host's lines go to `run_dir`/log.txt too (the kept ones first). Called by the
// host that owns the run's folder (rank 0's) once the folder is this run's (run_workers.cpp):
// a folder the run refuses is never written.
void attach(const std::filesystem::path& run_dir);

// No more lines to a run's log, and none kept: before a refused command puts the run's files
// back as they were, and once the run's folder is finished with.
void detach();

// What the host printed outside its logger (main.cpp's "host: error: ...", a benchmark's
// table, "results in DIR"), written to the attached run's log, each of its lines prefixed.
void write_line(const std::string& level, const std::string& text);

}  // namespace mlhost::host_log
