#include "plan/calibration_cache.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "run/run_files.hpp"

namespace mlhost {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {
constexpr int kSchemaVersion = 1;
}

fs::path calibration_cache_file() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return fs::path(xdg) / "mlhost" / "calibration.json";
  if (const char* home = std::getenv("HOME"); home && *home)
    return fs::path(home) / ".cache" / "mlhost" / "calibration.json";
  return {};
}

void CalibrationCache::load() {
  results_.clear();
  std::error_code ec;
  if (file_.empty() || !fs::exists(file_, ec)) return;
  const std::string where = "calibration cache '" + file_.string() + "'";
  std::ifstream in(file_);
  if (!in) throw CalibrationError(where + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  const json j = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw CalibrationError(where + ": not valid JSON");
  if (!j.is_object()) throw CalibrationError(where + ": expected a JSON object");
  if (!j.contains("schema_version") || j["schema_version"] != kSchemaVersion)
    throw CalibrationError(where + ": schema_version: expected " + std::to_string(kSchemaVersion));
  if (!j.contains("calibrations") || !j["calibrations"].is_array())
    throw CalibrationError(where + ": calibrations: expected an array");
  std::vector<CalibrationResult> results;
  for (size_t i = 0; i < j["calibrations"].size(); ++i)
    results.push_back(CalibrationResult::from_json(j["calibrations"][i], where + ": calibrations[" + std::to_string(i) + "]"));
  results_ = std::move(results);
}

std::optional<CalibrationResult> CalibrationCache::find(const CalibrationKey& key) const {
  for (const auto& r : results_)
    if (r.key == key) return r;
  return std::nullopt;
}

void CalibrationCache::store(const CalibrationResult& result) {
  if (file_.empty()) throw std::runtime_error("no calibration cache: neither XDG_CACHE_HOME nor HOME is set");
  std::vector<CalibrationResult> kept;
  for (auto& r : results_)
    if (r.key.algorithm != result.key.algorithm || r.key.device != result.key.device) kept.push_back(std::move(r));
  kept.push_back(result);
  results_ = std::move(kept);
  json all = json::array();
  for (const auto& r : results_) all.push_back(r.to_json());
  std::error_code ec;
  fs::create_directories(file_.parent_path(), ec);
  if (ec) throw std::runtime_error("cannot create '" + file_.parent_path().string() + "': " + ec.message());
  write_file_atomically(file_, json{{"schema_version", kSchemaVersion}, {"calibrations", all}}.dump(2) + "\n");
}

}  // namespace mlhost
