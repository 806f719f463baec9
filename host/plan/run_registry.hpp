// The machine's record of the runs being planned or running here, so that runs started
// together share the cores: a run's workers show in /proc only once they start, after the
// plan fixed their threads, so two runs started within a second would each plan every core.
// Each host enters itself before it looks at the machine (threads 0: still planning), writes
// its planned threads once it has them, and leaves at exit; entries of processes that are
// gone are dropped by whoever reads next. One file per run in a folder every user may write
// (/tmp/mlhost-runs, or MLH_RUN_REGISTRY_DIR), read and written under an flock.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace mlhost {

struct RegisteredRun {
  pid_t pid = 0;      // the host's
  int threads = 0;    // its workers' intra-op threads; 0 while it plans
};

class RunRegistry {
 public:
  // The registry folder (made if missing); null where it cannot be used (the run then plans
  // from /proc alone, as before runs were recorded).
  static std::unique_ptr<RunRegistry> open();
  static std::unique_ptr<RunRegistry> open(const std::filesystem::path& dir);
  ~RunRegistry();  // leaves

  // This process's entry, with its threads (0: planning).
  void enter(int threads);
  // The runs of other live processes (stale entries removed).
  std::vector<RegisteredRun> others() const;
  void leave();

 private:
  explicit RunRegistry(std::filesystem::path dir);
  std::filesystem::path dir_;
  bool entered_ = false;
};

}  // namespace mlhost
