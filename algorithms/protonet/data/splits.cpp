#include "splits.hpp"

#include <fstream>
#include <set>
#include <sstream>

#include "fs_util.hpp"

namespace protonet {
namespace {

// The shipped splits (splits/README.md) and the format each is for.
struct Named {
  const char* name;
  const char* format;
};
constexpr Named kNamed[] = {{"vinyals", "omniglot"}, {"ravi", "miniimagenet"}};

const char* extension_of(const std::string& format) { return format == "miniimagenet" ? ".csv" : ".txt"; }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError("cannot open split file '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

const char* builtin_text(const std::string& file) {
  for (const BuiltinSplit& s : builtin_split_table())
    if (file == s.file) return s.text;
  return nullptr;
}

// The list of `split` from a named set, a folder, or the dataset's own files; false when the
// source has no such list.
bool find_list(const DatasetSpec& spec, const std::string& split, SplitList& out) {
  const std::string ext = extension_of(spec.format);
  for (const Named& n : kNamed) {
    if (spec.splits != n.name) continue;
    if (spec.format != n.format) {
      std::string fitting;
      for (const Named& m : kNamed)
        if (spec.format == m.format) fitting = std::string(" (") + spec.format + "'s: '" + m.name + "')";
      throw DataError("data.splits '" + spec.splits + "' is the standard split of " + n.format + ", not of " +
                      spec.format + fitting);
    }
    const std::string file = std::string(n.name) + "/" + split + ext;
    const char* text = builtin_text(file);
    if (!text) return false;
    out = {"built-in " + file, "", text};
    return true;
  }
  std::string path;
  if (spec.splits.empty()) {
    path = spec.format == "miniimagenet" ? spec.root + "/" + split + ext : spec.root + "/splits/" + split + ext;
  } else {
    if (!is_dir(spec.splits))
      throw DataError("data.splits '" + spec.splits + "' is neither a shipped split (vinyals for Omniglot, ravi for "
                      "miniImageNet) nor a folder of split files");
    path = spec.splits + "/" + split + ext;
  }
  if (!is_file(path)) return false;
  out = {"file '" + path + "'", path, read_file(path)};
  return true;
}

}  // namespace

std::vector<SplitList> split_lists(const DatasetSpec& spec) {
  if (!spec.split_file.empty()) {
    if (!is_file(spec.split_file)) throw DataError("split file '" + spec.split_file + "' does not exist");
    return {{"file '" + spec.split_file + "'", spec.split_file, read_file(spec.split_file)}};
  }
  if (spec.split.empty()) return {};
  SplitList list;
  if (find_list(spec, spec.split, list)) return {list};
  if (spec.split == "trainval") {
    SplitList train, val;
    if (find_list(spec, "train", train) && find_list(spec, "val", val)) return {train, val};
  }
  // Omniglot's own folder without split files: every character (the overlap check refuses a
  // test on them unless asked); everything else needs its list.
  if (spec.format == "omniglot" && spec.splits.empty()) return {};
  const std::string file = spec.split + extension_of(spec.format);
  const std::string also = spec.split == "trainval" ? ", nor both train and val lists" : "";
  if (spec.splits.empty())
    throw DataError("miniImageNet split CSV '" + spec.root + "/" + file + "' does not exist" + also +
                    " (data.splits=ravi selects the standard split shipped with the plugin)");
  if (is_dir(spec.splits))
    throw DataError("data.splits '" + spec.splits + "': no split file '" + spec.splits + "/" + file + "'" + also);
  throw DataError("data.splits '" + spec.splits + "' has no split '" + spec.split + "'" + also);
}

std::string class_identity(const std::string& format, const std::string& class_name) {
  if (format == "omniglot") {
    const size_t slash = class_name.rfind('/');
    if (slash != std::string::npos && class_name.compare(slash + 1, 3, "rot") == 0) return class_name.substr(0, slash);
  }
  return class_name;
}

std::vector<std::string> shared_classes(const std::string& format, const std::vector<std::string>& a,
                                        const std::vector<std::string>& b) {
  std::set<std::string> in_b, reported;
  for (const std::string& name : b) in_b.insert(class_identity(format, name));
  std::vector<std::string> out;
  for (const std::string& name : a) {
    const std::string id = class_identity(format, name);
    if (in_b.count(id) && reported.insert(id).second) out.push_back(id);
  }
  return out;
}

}  // namespace protonet
