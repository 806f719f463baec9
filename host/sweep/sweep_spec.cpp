#include "sweep/sweep_spec.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <set>

namespace mlhost {

using nlohmann::json;

namespace {

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// Splits at the commas outside brackets and quotes: "[1,2],[3,4]" is two values.
std::vector<std::string> split_top_level(const std::string& text, const std::string& what) {
  std::vector<std::string> parts;
  std::string current;
  int depth = 0;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '\\' && i + 1 < text.size()) current += text[i++];
      else if (c == '"') quoted = false;
    } else if (c == '"') {
      quoted = true;
    } else if (c == '[' || c == '{' || c == '(') {
      ++depth;
    } else if (c == ']' || c == '}' || c == ')') {
      if (--depth < 0) throw SweepError(what + ": an unmatched '" + std::string(1, c) + "'");
    } else if (c == ',' && depth == 0) {
      parts.push_back(trim(current));
      current.clear();
      continue;
    }
    current += c;
  }
  if (quoted || depth != 0) throw SweepError(what + ": an unclosed " + std::string(quoted ? "quote" : "bracket"));
  parts.push_back(trim(current));
  return parts;
}

double parse_number(const std::string& text, const std::string& what) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0 || !std::isfinite(v))
    throw SweepError(what + ": '" + text + "' is not a number");
  return v;
}

// Six significant digits: what a researcher reads in a table, and what --set gets.
std::string format_draw(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", v);
  return buffer;
}

std::string draw(const SweepParameter& p, std::mt19937_64& rng) {
  if (p.distribution.empty()) return p.values[std::uniform_int_distribution<size_t>(0, p.values.size() - 1)(rng)];
  const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  if (p.distribution == "uniform") return format_draw(p.low + u * (p.high - p.low));
  if (p.distribution == "loguniform") return format_draw(std::exp(std::log(p.low) + u * (std::log(p.high) - std::log(p.low))));
  const auto low = static_cast<int64_t>(p.low), high = static_cast<int64_t>(p.high);
  return std::to_string(std::uniform_int_distribution<int64_t>(low, high)(rng));
}

}  // namespace

SweepParameter parse_sweep_parameter(const std::string& text) {
  const std::string what = "--sweep '" + text + "'";
  SweepParameter p;
  p.text = text;
  const size_t eq = text.find('=');
  if (eq == std::string::npos)
    throw SweepError(what + ": expected KEY=VALUES (lr=0.1,0.01) or KEY=DISTRIBUTION(LOW,HIGH) (lr=loguniform(1e-4,1e-1))");
  p.key = trim(text.substr(0, eq));
  const std::string rest = trim(text.substr(eq + 1));
  if (p.key.empty() || p.key.find_first_of(" \t\"'[]{}(),") != std::string::npos || p.key.front() == '.' ||
      p.key.back() == '.' || p.key.find("..") != std::string::npos)
    throw SweepError(what + ": '" + p.key + "' is not a config key (a dotted name such as optimizer.lr)");
  if (rest.empty()) throw SweepError(what + ": no values after '='");
  for (const char* d : {"uniform", "loguniform", "randint"}) {
    const std::string name = d;
    if (rest.rfind(name + "(", 0) != 0) continue;
    if (rest.back() != ')') throw SweepError(what + ": " + name + "(LOW,HIGH) needs its closing ')'");
    const std::vector<std::string> bounds = split_top_level(rest.substr(name.size() + 1, rest.size() - name.size() - 2), what);
    if (bounds.size() != 2) throw SweepError(what + ": " + name + " takes two bounds, LOW and HIGH");
    p.distribution = name;
    p.low = parse_number(bounds[0], what);
    p.high = parse_number(bounds[1], what);
    if (!(p.low < p.high)) throw SweepError(what + ": LOW must be below HIGH");
    if (name == "loguniform" && p.low <= 0) throw SweepError(what + ": loguniform needs LOW above 0");
    if (name == "randint" && (p.low != std::floor(p.low) || p.high != std::floor(p.high)))
      throw SweepError(what + ": randint takes whole numbers");
    return p;
  }
  p.values = split_top_level(rest, what);
  std::set<std::string> seen;
  for (const std::string& v : p.values) {
    if (v.empty()) throw SweepError(what + ": an empty value (two commas, or one at an end)");
    if (!seen.insert(v).second) throw SweepError(what + ": the value '" + v + "' twice");
  }
  return p;
}

std::vector<uint64_t> parse_seeds(const std::string& text) {
  const std::string what = "--seeds '" + text + "'";
  auto whole = [&](const std::string& t) {
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(t.c_str(), &end, 10);
    if (t.empty() || t[0] == '-' || *end != '\0' || errno != 0)
      throw SweepError(what + ": '" + t + "' is not a whole number");
    return static_cast<uint64_t>(v);
  };
  const std::vector<std::string> parts = split_top_level(text, what);
  std::vector<uint64_t> seeds;
  if (parts.size() == 1) {
    const uint64_t n = whole(parts[0]);
    if (n < 1 || n > kMaxSweepTrials) throw SweepError(what + ": the number of seeds must be 1 to " + std::to_string(kMaxSweepTrials));
    for (uint64_t s = 1; s <= n; ++s) seeds.push_back(s);
    return seeds;
  }
  std::set<uint64_t> seen;
  for (const std::string& p : parts) {
    seeds.push_back(whole(p));
    if (!seen.insert(seeds.back()).second) throw SweepError(what + ": the seed " + p + " twice");
  }
  return seeds;
}

json SweepSpec::to_json() const {
  json params = json::array();
  for (const auto& p : parameters) params.push_back(p.text);
  return {{"parameters", params}, {"random_count", random_count}, {"seeds", seeds}};
}

std::string SweepTrial::name() const {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "trial-%03d", index);
  return buffer;
}

std::string SweepTrial::configuration() const {
  std::string text;
  for (const auto& [key, value] : values) text += (text.empty() ? "" : " ") + key + "=" + value;
  return text.empty() ? "(the config as given)" : text;
}

std::vector<std::string> SweepTrial::sets() const {
  std::vector<std::string> sets;
  for (const auto& [key, value] : values) sets.push_back(key + "=" + value);
  if (seed) sets.push_back("seed=" + std::to_string(*seed));
  return sets;
}

json SweepTrial::to_json() const {
  json v = json::array();
  for (const auto& [key, value] : values) v.push_back({key, value});
  return {{"index", index}, {"name", name()}, {"values", v}, {"seed", seed ? json(*seed) : json(nullptr)}};
}

SweepTrial SweepTrial::from_json(const json& j) {
  SweepTrial t;
  t.index = j.at("index").get<int>();
  for (const json& kv : j.at("values")) t.values.emplace_back(kv.at(0).get<std::string>(), kv.at(1).get<std::string>());
  if (!j.at("seed").is_null()) t.seed = j.at("seed").get<uint64_t>();
  return t;
}

std::vector<SweepTrial> expand_trials(const SweepSpec& spec, uint64_t random_seed) {
  std::set<std::string> keys;
  for (const auto& p : spec.parameters) {
    if (!keys.insert(p.key).second) throw SweepError("--sweep: the key '" + p.key + "' is swept twice");
    if (p.key == "seed" && !spec.seeds.empty())
      throw SweepError("--sweep '" + p.text + "' and --seeds both set the seed: give one of them");
    if (!p.distribution.empty() && spec.random_count == 0)
      throw SweepError("--sweep '" + p.text + "': a distribution is drawn from, so it needs --sweep-random N (N trials); "
                       "a grid takes lists of values");
  }
  if (spec.random_count < 0) throw SweepError("--sweep-random must be at least 1");
  if (spec.random_count > 0 && spec.parameters.empty()) throw SweepError("--sweep-random needs --sweep parameters to draw");

  std::vector<std::vector<std::pair<std::string, std::string>>> configurations;
  if (spec.random_count > 0) {
    std::mt19937_64 rng(random_seed);
    for (int i = 0; i < spec.random_count; ++i) {
      std::vector<std::pair<std::string, std::string>> c;
      for (const auto& p : spec.parameters) c.emplace_back(p.key, draw(p, rng));
      configurations.push_back(std::move(c));
    }
  } else {
    configurations.push_back({});
    for (const auto& p : spec.parameters) {
      std::vector<std::vector<std::pair<std::string, std::string>>> next;
      for (const auto& c : configurations)
        for (const std::string& v : p.values) {
          next.push_back(c);
          next.back().emplace_back(p.key, v);
        }
      configurations = std::move(next);
      if (configurations.size() > kMaxSweepTrials) break;
    }
  }
  const size_t seeds = spec.seeds.empty() ? 1 : spec.seeds.size();
  if (configurations.size() * seeds > kMaxSweepTrials)
    throw SweepError("the sweep would run over " + std::to_string(kMaxSweepTrials) + " trials (" +
                     std::to_string(configurations.size()) + " configurations x " + std::to_string(seeds) + " seeds)");
  std::vector<SweepTrial> trials;
  for (const auto& c : configurations)
    for (size_t s = 0; s < seeds; ++s) {
      SweepTrial t;
      t.index = static_cast<int>(trials.size()) + 1;
      t.values = c;
      if (!spec.seeds.empty()) t.seed = spec.seeds[s];
      trials.push_back(std::move(t));
    }
  return trials;
}

}  // namespace mlhost
