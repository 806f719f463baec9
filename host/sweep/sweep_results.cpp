#include "sweep/sweep_results.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/csv.hpp"
#include "common/files.hpp"

namespace mlhost {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// Student's t at 97.5% for 1 to 30 degrees of freedom; above that 1.96 + 2.46/df, within
// 0.001 of the table at 60 and 120.
double t_975(size_t df) {
  static const double table[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                 2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                 2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (df >= 1 && df <= 30) return table[df - 1];
  return 1.96 + 2.46 / static_cast<double>(df);
}

std::string number(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", v);
  return buffer;
}

std::string csv_line(const std::vector<std::string>& fields) {
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) line += (i ? "," : "") + csv_field(fields[i]);
  return line + "\n";
}

std::vector<std::string> metric_names(const std::vector<TrialOutcome>& outcomes) {
  std::set<std::string> names;
  for (const auto& o : outcomes)
    for (const auto& [name, value] : o.metrics) names.insert(name);
  return {names.begin(), names.end()};
}

std::string value_of(const std::vector<std::pair<std::string, std::string>>& values, const std::string& key) {
  for (const auto& [k, v] : values)
    if (k == key) return v;
  return "";
}

// Evaluation and validation metrics say most about a trial; throughput says nothing of it.
int metric_rank(const std::string& name) {
  for (const char* prefix : {"test/", "eval/", "val/"})
    if (name.rfind(prefix, 0) == 0) return 0;
  for (const char* prefix : {"charts/", "train/"})  // charts/: CleanRL's names, which ppo keeps
    if (name.rfind(prefix, 0) == 0) return 1;
  if (name.rfind("perf/", 0) == 0) return 3;
  return 2;
}

}  // namespace

std::optional<std::pair<std::string, double>> headline_metric(const TrialOutcome& outcome) {
  std::optional<std::pair<std::string, double>> best;
  for (const auto& [name, value] : outcome.metrics)  // by name: the first of each rank wins
    if (metric_rank(name) < 3 && (!best || metric_rank(name) < metric_rank(best->first))) best = {name, value};
  return best;
}

TrialOutcome read_trial_outcome(const fs::path& sweep_dir, const SweepTrial& trial) {
  TrialOutcome o;
  o.trial = trial;
  o.status = "not run";
  std::ifstream in(sweep_dir / trial.name() / "summary.json");
  if (!in) return o;
  const json summary = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!summary.is_object()) {
    o.status = "unreadable summary";
    return o;
  }
  o.status = summary.value("status", "unknown");
  if (summary.contains("elapsed_seconds") && summary["elapsed_seconds"].is_number())
    o.seconds = summary["elapsed_seconds"].get<double>();
  if (summary.contains("last_metrics") && summary["last_metrics"].is_object())
    for (const auto& [name, value] : summary["last_metrics"].items())
      if (value.is_number() && std::isfinite(value.get<double>())) o.metrics[name] = value.get<double>();
  return o;
}

MeanInterval mean_and_interval(const std::vector<double>& values) {
  MeanInterval m;
  m.n = values.size();
  if (values.empty()) return m;
  double sum = 0;
  for (double v : values) sum += v;
  m.mean = sum / static_cast<double>(m.n);
  if (m.n < 2) return m;
  double squares = 0;
  for (double v : values) squares += (v - m.mean) * (v - m.mean);
  const double sd = std::sqrt(squares / static_cast<double>(m.n - 1));
  m.half_width = t_975(m.n - 1) * sd / std::sqrt(static_cast<double>(m.n));
  return m;
}

std::vector<ConfigurationSummary> summarize(const std::vector<TrialOutcome>& outcomes) {
  std::vector<ConfigurationSummary> rows;
  std::map<std::string, std::map<std::string, std::vector<double>>> values;  // configuration -> metric -> per seed
  for (const auto& o : outcomes) {
    const std::string c = o.trial.configuration();
    auto row = std::find_if(rows.begin(), rows.end(), [&](const ConfigurationSummary& r) { return r.configuration == c; });
    if (row == rows.end()) {
      rows.push_back({c, o.trial.values, 0, 0, {}});
      row = rows.end() - 1;
    }
    ++row->trials;
    if (!o.completed()) continue;
    ++row->completed;
    for (const auto& [name, v] : o.metrics) values[c][name].push_back(v);
  }
  for (auto& row : rows)
    for (const auto& [name, v] : values[row.configuration]) row.metrics[name] = mean_and_interval(v);
  return rows;
}

void write_sweep_csv(const fs::path& sweep_dir, const std::vector<std::string>& keys, const std::vector<TrialOutcome>& outcomes) {
  const std::vector<std::string> metrics = metric_names(outcomes);
  std::vector<std::string> header{"trial"};
  header.insert(header.end(), keys.begin(), keys.end());
  header.insert(header.end(), {"seed", "status", "seconds"});
  header.insert(header.end(), metrics.begin(), metrics.end());
  std::string trials = csv_line(header);
  for (const auto& o : outcomes) {
    std::vector<std::string> row{o.trial.name()};
    for (const auto& k : keys) row.push_back(value_of(o.trial.values, k));
    row.push_back(o.trial.seed ? std::to_string(*o.trial.seed) : "");
    row.push_back(o.status);
    row.push_back(o.seconds ? number(*o.seconds) : "");
    for (const auto& m : metrics) {
      const auto it = o.metrics.find(m);
      row.push_back(it == o.metrics.end() ? "" : number(it->second));
    }
    trials += csv_line(row);
  }
  write_file_atomically(sweep_dir / "trials.csv", trials);

  std::vector<std::string> summary_header(keys.begin(), keys.end());
  summary_header.insert(summary_header.end(), {"trials", "completed"});
  for (const auto& m : metrics) summary_header.insert(summary_header.end(), {m + " mean", m + " ci95"});
  std::string summary = csv_line(summary_header);
  for (const auto& c : summarize(outcomes)) {
    std::vector<std::string> row;
    for (const auto& k : keys) row.push_back(value_of(c.values, k));
    row.push_back(std::to_string(c.trials));
    row.push_back(std::to_string(c.completed));
    for (const auto& m : metrics) {
      const auto it = c.metrics.find(m);
      row.push_back(it == c.metrics.end() ? "" : number(it->second.mean));
      row.push_back(it == c.metrics.end() || !it->second.half_width ? "" : number(*it->second.half_width));
    }
    summary += csv_line(row);
  }
  write_file_atomically(sweep_dir / "summary.csv", summary);
}

std::string sweep_table_text(const std::vector<std::string>& keys, const std::vector<TrialOutcome>& outcomes, size_t max_metrics) {
  std::vector<std::string> metrics = metric_names(outcomes);
  // Throughput says nothing of a trial's result: the CSV files keep it, the table does not.
  metrics.erase(std::remove_if(metrics.begin(), metrics.end(), [](const std::string& m) { return metric_rank(m) == 3; }),
                metrics.end());
  std::stable_sort(metrics.begin(), metrics.end(),
                   [](const std::string& a, const std::string& b) { return metric_rank(a) < metric_rank(b); });
  if (metrics.size() > max_metrics) metrics.resize(max_metrics);

  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> header(keys.begin(), keys.end());
  header.push_back("seeds done");
  header.insert(header.end(), metrics.begin(), metrics.end());
  cells.push_back(header);
  for (const auto& c : summarize(outcomes)) {
    std::vector<std::string> row;
    for (const auto& k : keys) row.push_back(value_of(c.values, k));
    row.push_back(std::to_string(c.completed) + "/" + std::to_string(c.trials));
    for (const auto& m : metrics) {
      const auto it = c.metrics.find(m);
      if (it == c.metrics.end()) row.push_back("-");
      else row.push_back(number(it->second.mean) + (it->second.half_width ? " ± " + number(*it->second.half_width) : ""));
    }
    cells.push_back(row);
  }
  // Column widths in characters; "±" is one character of two bytes.
  auto width = [](const std::string& s) {
    size_t n = 0;
    for (unsigned char ch : s) n += (ch & 0xC0) != 0x80;
    return n;
  };
  std::vector<size_t> widths(header.size(), 0);
  for (const auto& row : cells)
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], width(row[i]));
  std::ostringstream out;
  for (const auto& row : cells) {
    for (size_t i = 0; i < row.size(); ++i)
      out << row[i] << (i + 1 < row.size() ? std::string(widths[i] - width(row[i]) + 2, ' ') : "");
    out << "\n";
  }
  return out.str();
}

}  // namespace mlhost
