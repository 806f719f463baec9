// A generic class-per-folder layout: <root>/<class>/*.{png,jpg,jpeg}. Classes are the sorted
// subfolder names; images inside each are sorted by name.
#pragma once

#include "decode.hpp"
#include "image_set.hpp"

namespace protonet {

FilePlan plan_folder(const DatasetSpec& spec);
ImageSet load_folder(const DatasetSpec& spec);

}  // namespace protonet
