#include "run/restarts.hpp"

#include <fstream>

#include <spdlog/spdlog.h>

#include "common/files.hpp"
#include "common/stop_request.hpp"

namespace mlhost {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// The restarts so far, added to the summary the last attempt left (the worker's or the
// host's): {"attempt": 1, "cause": "rank 1 was killed by signal 9 (Killed)"}, ...
void record_restarts(const fs::path& run_dir, const std::vector<std::string>& causes) {
  std::ifstream in(run_dir / "summary.json");
  json summary = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!summary.is_object()) summary = json::object();
  json restarts = json::array();
  for (size_t i = 0; i < causes.size(); ++i) restarts.push_back({{"after_attempt", i + 1}, {"cause", causes[i]}});
  summary["restarts"] = std::move(restarts);
  write_file_atomically(run_dir / "summary.json", summary.dump(2) + "\n");
}

}  // namespace

int run_with_restarts(RunJob job, int max_restarts) {
  std::vector<std::string> causes;  // of the restarts so far
  const bool writes_summary = job.launch.first_rank == 0;
  for (;;) {
    try {
      const int status = run_workers(job);
      if (writes_summary && !causes.empty()) record_restarts(job.run_dir, causes);
      return status;
    } catch (const WorkersFailed& e) {
      const int attempt = static_cast<int>(causes.size()) + 1;
      // A stop request that came meanwhile explains the failure better than any restart would.
      if (attempt > max_restarts || first_stop_signal() != 0) {
        if (causes.empty()) throw;
        if (writes_summary) record_restarts(job.run_dir, causes);
        std::string all;
        for (size_t i = 0; i < causes.size(); ++i) all += "\n  attempt " + std::to_string(i + 1) + ": " + causes[i];
        throw HostError("training failed " + std::to_string(attempt) + " times (--max-restarts " +
                        std::to_string(max_restarts) + "):" + all + "\n  attempt " + std::to_string(attempt) + ": " +
                        e.what());
      }
      causes.push_back(e.cause());
      spdlog::warn("attempt {} failed: {}; restart {} of {} from the last checkpoint", attempt, e.cause(), attempt,
                   max_restarts);
      job.resume = true;
    }
  }
}

}  // namespace mlhost
