#include "folder.hpp"

#include <algorithm>

#include "fs_util.hpp"

namespace protonet {

namespace {

std::string colour_name(int channels) {
  switch (channels) {
    case 1: return "grayscale";
    case 2: return "grayscale with alpha";
    case 3: return "RGB";
    default: return "RGBA";
  }
}

std::string size_name(int width, int height) { return std::to_string(width) + "x" + std::to_string(height); }

}  // namespace

FilePlan plan_folder(const DatasetSpec& spec) {
  if (spec.root.empty()) throw DataError("folder dataset: no root folder given");
  if (!is_dir(spec.root)) throw DataError("folder dataset '" + spec.root + "': not a folder");
  FilePlan plan;
  for (const std::string& cls : list_subdirs(spec.root)) {
    const std::string dir = spec.root + "/" + cls;
    const int32_t label = static_cast<int32_t>(plan.class_names.size());
    size_t found = 0;
    // Other files (notes, thumbnails databases) are not images of the class and are skipped
    // (the run names them; data.strict refuses them); a file with an image extension that
    // does not decode is an error.
    for (const std::string& file : list_files(dir)) {
      if (!has_image_extension(file)) {
        plan.skipped.push_back(dir + "/" + file);
        continue;
      }
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

FolderSurvey survey_folder(const DatasetSpec& spec) {
  const FilePlan plan = plan_folder(spec);
  FolderSurvey survey;
  survey.skipped = plan.skipped;
  for (const ImageItem& item : plan.items) {
    ++survey.images;
    RawImage header;
    if (read_image_header(item.path, header))
      ++survey.stored[{header.width, header.height, header.channels}];
    else
      ++survey.unreadable;
  }
  return survey;
}

std::string describe_stored_images(const FolderSurvey& survey, const DatasetSpec& spec, bool* converts) {
  bool resized = false, converted = false;
  // Stored sizes and colours, the most common first (ties by size), at most three named.
  std::vector<std::pair<int64_t, std::tuple<int, int, int>>> kinds;
  for (const auto& [kind, count] : survey.stored) {
    kinds.push_back({count, kind});
    const auto [w, h, c] = kind;
    resized |= w != spec.width || h != spec.height;
    // Grayscale read as grayscale, or RGB as RGB, keeps the pixels; alpha is dropped either way.
    converted |= (c <= 2 ? 1 : 3) != spec.channels;
  }
  std::stable_sort(kinds.begin(), kinds.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string stored;
  for (size_t i = 0; i < kinds.size() && i < 3; ++i) {
    const auto [w, h, c] = kinds[i].second;
    stored += (i ? ", " : "") + std::to_string(kinds[i].first) + " at " + size_name(w, h) + " " + colour_name(c);
  }
  if (kinds.size() > 3) stored += ", " + std::to_string(kinds.size() - 3) + " other sizes or colours";
  if (survey.unreadable > 0) stored += ", " + std::to_string(survey.unreadable) + " without a readable header";

  std::string line = std::to_string(survey.images) + " images (" + stored + "), read as " +
                     size_name(spec.width, spec.height) + " " + colour_name(spec.channels) +
                     " (data.width, data.height, data.channels)";
  if (resized)
    line += "; resized to that without keeping the aspect ratio (area-averaged where smaller, bilinear where larger)";
  if (converted)
    line += spec.channels == 1 ? "; colour converted to grayscale (luminance)" : "; grayscale copied to 3 channels";
  if (converts) *converts = resized || converted;
  return line;
}

}  // namespace protonet
