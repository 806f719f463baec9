#include "mps_prepare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <mlh/plan_reader.hpp>

namespace mlh::mps {
namespace {

// "0.750" -> "0.75", "1.000" -> "1": the shortest text of the rounded value.
std::string ratio_text(double fraction) {
  // In thousandths, at least 1: PyTorch reads a ratio of 0 as "no limit".
  long thousandths = std::max(1L, std::lround(fraction * 1000.0));
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "%.3f", static_cast<double>(thousandths) / 1000.0);
  std::string text = buffer;
  text.erase(text.find_last_not_of('0') + 1);
  if (text.back() == '.') text.pop_back();
  return text;
}

}  // namespace

std::vector<EnvVar> mps_environment(const std::string& plan_json) {
  const PlanReader plan(plan_json);
  std::vector<EnvVar> env{{"PYTORCH_ENABLE_MPS_FALLBACK", "1"}};
  if (auto fraction = plan.number("memory_fraction", [](double f) { return f > 0.0 && f <= 1.0; }, "a number in (0, 1]")) {
    // PyTorch's allocator refuses a low watermark above the high one (its default low is 1.4).
    const std::string ratio = ratio_text(*fraction);
    env.push_back({"PYTORCH_MPS_HIGH_WATERMARK_RATIO", ratio});
    env.push_back({"PYTORCH_MPS_LOW_WATERMARK_RATIO", ratio});
  }
  return env;
}

}  // namespace mlh::mps
