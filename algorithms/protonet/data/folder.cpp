#include "folder.hpp"

#include "fs_util.hpp"

namespace protonet {

FilePlan plan_folder(const DatasetSpec& spec) {
  if (spec.root.empty()) throw DataError("folder dataset: no root folder given");
  if (!is_dir(spec.root)) throw DataError("folder dataset '" + spec.root + "': not a folder");
  FilePlan plan;
  for (const std::string& cls : list_subdirs(spec.root)) {
    const std::string dir = spec.root + "/" + cls;
    const int32_t label = static_cast<int32_t>(plan.class_names.size());
    size_t found = 0;
    // Other files (notes, thumbnails databases) are not images of the class and are skipped;
    // a file with an image extension that does not decode is an error.
    for (const std::string& file : list_files(dir)) {
      if (!has_image_extension(file)) continue;
      plan.items.push_back({dir + "/" + file, label, 0});
      plan.sources.push_back(dir + "/" + file);
      ++found;
    }
    if (found == 0) throw DataError("folder dataset: class folder '" + dir + "' holds no .png/.jpg/.jpeg images");
    plan.class_names.push_back(cls);
  }
  if (plan.class_names.empty()) throw DataError("folder dataset '" + spec.root + "': no class subfolders");
  return plan;
}

ImageSet load_folder(const DatasetSpec& spec) {
  return decode_plan(plan_folder(spec), {spec.channels, spec.height, spec.width, spec.invert});
}

}  // namespace protonet
