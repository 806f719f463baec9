#include "miniimagenet.hpp"

#include <map>
#include <sstream>

#include "fs_util.hpp"
#include "splits.hpp"

namespace protonet {

FilePlan plan_miniimagenet(const DatasetSpec& spec) {
  if (spec.root.empty()) throw DataError("miniImageNet dataset: no root folder given");
  if (spec.split.empty())
    throw DataError("miniImageNet root '" + spec.root + "': no split given (train, val, test or trainval)");
  const std::vector<SplitList> lists = split_lists(spec);
  const std::string images = spec.root + "/images";
  if (!is_dir(images)) throw DataError("miniImageNet images folder '" + images + "' does not exist");

  FilePlan plan;
  std::map<std::string, int32_t> label_of;
  for (const SplitList& list : lists) {
    if (!list.path.empty()) plan.sources.push_back(list.path);
    std::istringstream in(list.text);
    std::string line;
    int lineno = 0;
    bool header = false;
    const size_t before = plan.items.size();
    while (std::getline(in, line)) {
      ++lineno;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      const auto where = [&] { return "miniImageNet CSV " + list.origin + " line " + std::to_string(lineno) + ": "; };
      if (!header) {
        // Some copies start with a UTF-8 byte order mark.
        if (line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
        if (line != "filename,label")
          throw DataError(where() + "expected the header 'filename,label', got '" + line + "'");
        header = true;
        continue;
      }
      if (line.empty()) continue;
      const size_t comma = line.find(',');
      if (comma == std::string::npos || line.find(',', comma + 1) != std::string::npos)
        throw DataError(where() + "'" + line + "' is not 'filename,label'");
      const std::string file = line.substr(0, comma), label = line.substr(comma + 1);
      if (file.empty() || label.empty()) throw DataError(where() + "'" + line + "' has an empty field");
      if (file.find('/') != std::string::npos || file == "..")
        throw DataError(where() + "file name '" + file + "' must not contain a folder");
      std::string path = images + "/" + file;
      if (!is_file(path)) {
        const std::string nested = images + "/" + label + "/" + file;
        if (!is_file(nested)) throw DataError(where() + "image '" + path + "' does not exist");
        path = nested;
      }
      auto [it, inserted] = label_of.emplace(label, static_cast<int32_t>(plan.class_names.size()));
      if (inserted) plan.class_names.push_back(label);
      plan.items.push_back({path, it->second, 0});
      plan.sources.push_back(path);
    }
    if (!header)
      throw DataError("miniImageNet CSV " + list.origin + " is empty (expected the header 'filename,label')");
    if (plan.items.size() == before) throw DataError("miniImageNet CSV " + list.origin + " lists no images");
  }
  return plan;
}

ImageSet load_miniimagenet(const DatasetSpec& spec) {
  return decode_plan(plan_miniimagenet(spec), {spec.channels, spec.height, spec.width, spec.invert});
}

}  // namespace protonet
