// A generic class-per-folder layout: <root>/<class>/*.{png,jpg,jpeg}. Classes are the sorted
// subfolder names; images inside each are sorted by name. Other files are not read.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "decode.hpp"
#include "image_set.hpp"

namespace protonet {

FilePlan plan_folder(const DatasetSpec& spec);
ImageSet load_folder(const DatasetSpec& spec);

// What a folder holds beyond the classes it gives, for the lines a run logs before it reads
// it: the files it skips, and the sizes and channels its images are stored at (which the run
// converts to the spec's). From the listing and the images' headers; nothing is decoded.
struct FolderSurvey {
  std::vector<std::string> skipped;                               // paths of files that are not images
  std::map<std::tuple<int, int, int>, int64_t> stored;            // (width, height, channels) -> images
  int64_t images = 0, unreadable = 0;                             // unreadable: no header stb reads
};
FolderSurvey survey_folder(const DatasetSpec& spec);

// "500 images stored at 40x40 RGB, read as 28x28 grayscale: resized (...), converted (...)";
// `converts` is set when the images are resized or their channels converted.
std::string describe_stored_images(const FolderSurvey& survey, const DatasetSpec& spec, bool* converts);

}  // namespace protonet
