#include "arc_grid.hpp"

#include <mlh/plugin.hpp>

namespace trm::arc {
namespace {

// out(r, c) = in(src(r, c)) for an output of rows x cols.
template <typename Src>
Grid remap(const Grid& g, int rows, int cols, Src src) {
  Grid out;
  out.rows = rows;
  out.cols = cols;
  out.cells.resize(static_cast<size_t>(rows) * static_cast<size_t>(cols));
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const auto [sr, sc] = src(r, c);
      out.cells[static_cast<size_t>(r) * static_cast<size_t>(cols) + static_cast<size_t>(c)] = g.at(sr, sc);
    }
  return out;
}

[[noreturn]] void bad_name(const std::string& name, const std::string& what) {
  throw mlh::DataError("malformed augmented puzzle name '" + name + "': " + what);
}

template <typename Json>
Grid parse_grid_impl(const Json& j, const std::string& where) {
  const auto bad = [&](const std::string& what) { throw mlh::DataError(where + ": " + what); };
  if (!j.is_array()) bad(std::string("must be a list of rows, not ") + j.type_name());
  if (j.empty()) bad("empty grid (no rows)");
  if (j.size() > static_cast<size_t>(kMaxGridSize))
    bad(std::to_string(j.size()) + " rows, more than " + std::to_string(kMaxGridSize));
  Grid g;
  g.rows = static_cast<int>(j.size());
  for (size_t r = 0; r < j.size(); ++r) {
    const auto& row = j[r];
    const std::string rname = "row " + std::to_string(r);
    if (!row.is_array()) bad(rname + " must be a list, not " + row.type_name());
    if (r == 0) {
      if (row.empty()) bad("empty grid (row 0 has no cells)");
      if (row.size() > static_cast<size_t>(kMaxGridSize))
        bad(std::to_string(row.size()) + " columns, more than " + std::to_string(kMaxGridSize));
      g.cols = static_cast<int>(row.size());
      g.cells.reserve(static_cast<size_t>(g.rows) * row.size());
    } else if (row.size() != static_cast<size_t>(g.cols)) {
      bad("ragged " + rname + ": " + std::to_string(row.size()) + " cells, row 0 has " + std::to_string(g.cols));
    }
    for (size_t c = 0; c < row.size(); ++c) {
      const auto& v = row[c];
      const std::string cell = "cell [" + std::to_string(r) + "][" + std::to_string(c) + "]";
      if (!v.is_number_integer()) bad(cell + " must be an integer colour 0..9, not " + v.dump());
      const bool ok = v.is_number_unsigned() ? v.template get<uint64_t>() <= 9 : (v.template get<int64_t>() >= 0 && v.template get<int64_t>() <= 9);
      if (!ok) bad(cell + " has colour value " + v.dump() + " outside 0..9");
      g.cells.push_back(static_cast<uint8_t>(v.template get<int64_t>()));
    }
  }
  return g;
}

}  // namespace

Grid dihedral_transform(const Grid& g, int tid) {
  const int R = g.rows, C = g.cols;
  using P = std::pair<int, int>;
  switch (tid) {
    case 1:  // rot90 k=1: out[i][j] = in[j][C-1-i], shape (C, R)
      return remap(g, C, R, [&](int i, int j) { return P{j, C - 1 - i}; });
    case 2:  // rot90 k=2
      return remap(g, R, C, [&](int i, int j) { return P{R - 1 - i, C - 1 - j}; });
    case 3:  // rot90 k=3: out[i][j] = in[R-1-j][i]
      return remap(g, C, R, [&](int i, int j) { return P{R - 1 - j, i}; });
    case 4:  // fliplr
      return remap(g, R, C, [&](int i, int j) { return P{i, C - 1 - j}; });
    case 5:  // flipud
      return remap(g, R, C, [&](int i, int j) { return P{R - 1 - i, j}; });
    case 6:  // transpose
      return remap(g, C, R, [&](int i, int j) { return P{j, i}; });
    case 7:  // fliplr(rot90(k=1)): out[i][j] = rot[i][R-1-j] = in[R-1-j][C-1-i]
      return remap(g, C, R, [&](int i, int j) { return P{R - 1 - j, C - 1 - i}; });
    default:
      return g;
  }
}

Grid inverse_dihedral_transform(const Grid& g, int tid) {
  static constexpr int kInverse[8] = {0, 3, 2, 1, 4, 5, 6, 7};
  return dihedral_transform(g, tid >= 0 && tid < 8 ? kInverse[tid] : tid);
}

std::string augmented_name(const std::string& base, const Augmentation& a) {
  std::string s = base + kPuzzleIdSeparator + "t" + std::to_string(a.dihedral) + kPuzzleIdSeparator;
  for (uint8_t c : a.colour_map) s += std::to_string(c);
  return s;
}

std::pair<std::string, Augmentation> parse_augmented_name(const std::string& name) {
  const std::string sep = kPuzzleIdSeparator;
  const size_t first = name.find(sep);
  if (first == std::string::npos) return {name, Augmentation{}};
  // name.split("|||")[-2:]: the last two fields.
  const size_t last = name.rfind(sep);
  if (last == first) bad_name(name, "needs two '|||' separators");
  const size_t prev = name.rfind(sep, last - 1);
  const std::string trans = name.substr(prev + sep.size(), last - prev - sep.size());
  const std::string perm = name.substr(last + sep.size());
  Augmentation a;
  if (trans.size() != 2 || trans[0] != 't' || trans[1] < '0' || trans[1] > '7')
    bad_name(name, "transform field '" + trans + "' is not t0..t7");
  a.dihedral = trans[1] - '0';
  if (perm.size() != 10) bad_name(name, "colour field '" + perm + "' is not 10 digits");
  std::array<bool, 10> seen{};
  for (size_t i = 0; i < 10; ++i) {
    const char ch = perm[i];
    if (ch < '0' || ch > '9' || seen[static_cast<size_t>(ch - '0')])
      bad_name(name, "colour field '" + perm + "' is not a permutation of 0..9");
    seen[static_cast<size_t>(ch - '0')] = true;
    a.colour_map[i] = static_cast<uint8_t>(ch - '0');
  }
  return {name.substr(0, first), a};
}

Grid apply(const Augmentation& a, const Grid& g) {
  Grid m = g;
  for (auto& c : m.cells) c = a.colour_map[c];
  return dihedral_transform(m, a.dihedral);
}

Grid undo(const Augmentation& a, const Grid& g) {
  std::array<uint8_t, 10> inv{};  // argsort of the mapping
  for (size_t i = 0; i < 10; ++i) inv[a.colour_map[i]] = static_cast<uint8_t>(i);
  Grid m = inverse_dihedral_transform(g, a.dihedral);
  for (auto& c : m.cells) c = c < 10 ? inv[c] : c;
  return m;
}

Grid parse_grid(const nlohmann::json& j, const std::string& where) { return parse_grid_impl(j, where); }
Grid parse_grid(const nlohmann::ordered_json& j, const std::string& where) { return parse_grid_impl(j, where); }

nlohmann::ordered_json to_json(const Grid& g) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (int r = 0; r < g.rows; ++r) {
    nlohmann::ordered_json row = nlohmann::ordered_json::array();
    for (int c = 0; c < g.cols; ++c) row.push_back(g.at(r, c));
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace trm::arc
