// ARC grids and the TRM reference's augmentations of them (dataset/common.py's dihedral
// transforms, build_arc_dataset.py's aug / inverse_aug): a puzzle variant is a dihedral
// transform and a permutation of the colours 1..9 (0, the background, stays), and its name
// "<task>|||t<tid>|||<mapping digits>" says which, so that predictions on a variant can be
// mapped back to the original task.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace trm::arc {

constexpr int kMaxGridSize = 30;
constexpr const char* kPuzzleIdSeparator = "|||";

struct Grid {
  int rows = 0, cols = 0;
  std::vector<uint8_t> cells;  // row-major
  uint8_t at(int r, int c) const { return cells[static_cast<size_t>(r) * static_cast<size_t>(cols) + static_cast<size_t>(c)]; }
  bool operator==(const Grid& o) const { return rows == o.rows && cols == o.cols && cells == o.cells; }
  bool operator!=(const Grid& o) const { return !(*this == o); }
};

// numpy semantics of dataset/common.py: 0 identity, 1..3 np.rot90 k times (counter-clockwise),
// 4 fliplr, 5 flipud, 6 transpose, 7 fliplr(rot90(k=1)) (anti-diagonal). Other tids return the
// grid unchanged, as the reference does.
Grid dihedral_transform(const Grid&, int tid);
// DIHEDRAL_INVERSE = [0, 3, 2, 1, 4, 5, 6, 7].
Grid inverse_dihedral_transform(const Grid&, int tid);

struct Augmentation {
  int dihedral = 0;
  std::array<uint8_t, 10> colour_map{0, 1, 2, 3, 4, 5, 6, 7, 8, 9};  // colour c -> colour_map[c]
  bool operator==(const Augmentation& o) const { return dihedral == o.dihedral && colour_map == o.colour_map; }
};

// "base|||t3|||0123456789", as the reference's aug().
std::string augmented_name(const std::string& base, const Augmentation&);
// inverse_aug: a name without "|||" is (name, identity); otherwise the text before the first
// separator and the last two fields ("t<0..7>" and a permutation of the ten digits). A
// malformed name throws mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming it.
std::pair<std::string, Augmentation> parse_augmented_name(const std::string& name);

// dihedral_transform(mapping[grid], tid).
Grid apply(const Augmentation&, const Grid&);
// inv_perm[inverse_dihedral_transform(grid, tid)]: undoes apply.
Grid undo(const Augmentation&, const Grid&);

// A list of 1..30 equal-length rows of 1..30 integers 0..9; anything else throws
// mlh::Error(MLH_ERR_INVALID_ARGUMENT) "<where>: <what is wrong>" (`where` names the file,
// task and field, e.g. "x.json: task 007bbfb7: train[2].input").
Grid parse_grid(const nlohmann::json&, const std::string& where);
Grid parse_grid(const nlohmann::ordered_json&, const std::string& where);
nlohmann::ordered_json to_json(const Grid&);

}  // namespace trm::arc
