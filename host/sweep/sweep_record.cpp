#include "sweep/sweep_record.hpp"

#include <fstream>

#include "common/files.hpp"

namespace mlhost {

using nlohmann::json;
namespace fs = std::filesystem;

json SweepRecord::identity() const {
  return {{"algorithm", algorithm}, {"spec", spec.to_json()}, {"config_file", config_file}, {"sets", sets}};
}

json SweepRecord::to_json() const {
  json j = identity();
  j["trials"] = json::array();
  for (const auto& t : trials) j["trials"].push_back(t.to_json());
  return j;
}

void write_sweep_record(const fs::path& sweep_dir, const SweepRecord& record) {
  write_file_atomically(sweep_dir / "sweep.json", record.to_json().dump(2) + "\n");
}

std::optional<SweepRecord> read_sweep_record(const fs::path& sweep_dir) {
  const fs::path file = sweep_dir / "sweep.json";
  std::error_code ec;
  if (!fs::exists(file, ec)) return std::nullopt;
  std::ifstream in(file);
  const json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  try {
    if (!j.is_object()) throw std::runtime_error("not a JSON object");
    SweepRecord r;
    r.algorithm = j.at("algorithm").get<std::string>();
    for (const json& p : j.at("spec").at("parameters")) r.spec.parameters.push_back(parse_sweep_parameter(p.get<std::string>()));
    r.spec.random_count = j.at("spec").at("random_count").get<int>();
    r.spec.seeds = j.at("spec").at("seeds").get<std::vector<uint64_t>>();
    r.config_file = j.at("config_file").get<std::string>();
    r.sets = j.at("sets").get<std::vector<std::string>>();
    for (const json& t : j.at("trials")) r.trials.push_back(SweepTrial::from_json(t));
    if (r.trials.empty()) throw std::runtime_error("no trials");
    return r;
  } catch (const std::exception& e) {
    throw SweepError("sweep file " + file.string() + " cannot be read (" + e.what() + "); it was not written by this host");
  }
}

}  // namespace mlhost
