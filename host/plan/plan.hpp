// The execution plan: how a run uses the chosen device. Each value comes, in order of
// precedence, from the command line, the user's config (for the algorithm's own fields),
// the hardware settings file, the automatic rules, the device plugin's recommendation, or
// a default; plan["sources"] says which for every value (docs/plan.md).
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/autoconfig.hpp"
#include "plan/calibration.hpp"
#include "plan/settings.hpp"
#include "probe/device.hpp"

namespace mlhost {

// A plan that cannot be made (e.g. a precision the device cannot run). Names the value.
class PlanError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct PlanInputs {
  const Device* device = nullptr;
  const std::vector<AutoRule>* rules = nullptr;  // may be empty
  const HardwareSettings* settings = nullptr;    // may be null
  std::optional<std::string> precision;          // --precision (auto counts as unset)
  std::optional<int64_t> batch_size;             // --batch-size
  std::optional<std::string> allocator;          // --allocator (auto counts as unset)
  const char* allocator_search_path = nullptr;   // MLH_ALLOCATOR_PATH (allocator.hpp)
  bool allocator_search_system = true;           // and the system's library folders (tests: false)
  // The calibration for this machine and algorithm (its choices count after the command line
  // and the settings file), and what became of calibrating ("measured now", "cached in FILE",
  // "not calibrated: --no-calibrate", ...), printed and saved with the plan.
  const CalibrationResult* calibration = nullptr;
  std::string calibration_status;
  // --batch-size auto: the batch size finder's result ({"batch", "reason", ...}) and whether
  // it was measured now or cached; its batch wins over everything else.
  const nlohmann::json* batch_search = nullptr;
  std::string batch_search_status;
  const nlohmann::json* description = nullptr;   // the algorithm's describe() output, or null
  std::optional<std::string> algorithm_torch;    // the LibTorch the algorithm was built with (its manifest)
  std::string settings_file_status;              // which hardware settings file was read, and why that one
  const nlohmann::json* user_config = nullptr;   // what the user set (--config, --set), or null
};

nlohmann::json make_plan(const PlanInputs& in);

// Whether a LibTorch version ("1.13.1", "2.15.0+cu130") is at least major.minor; one that does
// not read as a version counts as new enough (nothing is refused on a guess).
bool torch_version_at_least(const std::string& version, int major, int minor);

// A readable table of the plan: value and where it came from, one line each.
std::string plan_to_text(const nlohmann::json& plan);

}  // namespace mlhost
