// miniImageNet (Ravi & Larochelle's split): <root>/images/<file> and the split's CSV (splits.hpp:
// <root>/<split>.csv, the shipped "ravi" lists, or a folder's) with a header "filename,label". Classes in order of first appearance in the CSV. An image missing
// from images/ is also looked for under images/<label>/ (some copies are laid out that way).
// Size and channels come from the spec (the usual config is 84 x 84 RGB).
#pragma once

#include "decode.hpp"
#include "image_set.hpp"

namespace protonet {

FilePlan plan_miniimagenet(const DatasetSpec& spec);
ImageSet load_miniimagenet(const DatasetSpec& spec);

}  // namespace protonet
