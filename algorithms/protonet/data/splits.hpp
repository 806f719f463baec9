// Which classes each split of Omniglot or miniImageNet holds (data.splits), and the check that
// a few-shot test does not use the classes it was trained on.
//
// data.splits:
//   ""         the dataset's own lists: Omniglot <root>/splits/<split>.txt where it exists
//              (none: every character), miniImageNet <root>/<split>.csv
//   "vinyals"  Omniglot's standard split, shipped in the plugin (splits/README.md)
//   "ravi"     miniImageNet's standard split, shipped in the plugin
//   a folder   <folder>/<split>.txt (Omniglot) or <folder>/<split>.csv (miniImageNet)
// Split "trainval" (retraining on train + val) is the source's trainval list where it has
// one, else its train and val lists one after the other.
#pragma once

#include <string>
#include <vector>

#include "image_set.hpp"

namespace protonet {

struct BuiltinSplit {
  const char* file;  // "<set>/<split>.<ext>", e.g. "vinyals/train.txt"
  const char* text;
};
// Every shipped split file (generated from algorithms/protonet/splits by builtin_splits.cmake).
const std::vector<BuiltinSplit>& builtin_split_table();

// One list of a split: where it comes from (for messages and the cache) and its text.
struct SplitList {
  std::string origin;  // "file '<path>'", or "built-in vinyals/train.txt"
  std::string path;    // the file read ("" for a built-in list)
  std::string text;
};

// The lists spec.split of spec.splits names (spec.split_file alone where given). Empty when
// no list applies (Omniglot without split files). A missing file, a named split of another
// dataset, or an unknown name is a DataError naming data.splits and what was looked for.
std::vector<SplitList> split_lists(const DatasetSpec& spec);

// What makes two classes the same for the overlap check: Omniglot's character (a rotation
// of a trained character is not a new class), else the class name.
std::string class_identity(const std::string& format, const std::string& class_name);

// The classes of `a` that are also in `b`, by class_identity, in `a`'s order, each once.
std::vector<std::string> shared_classes(const std::string& format, const std::vector<std::string>& a,
                                        const std::vector<std::string>& b);

}  // namespace protonet
