// Omniglot: <root>/<Alphabet>/<characterNN>/*.png, either directly or under
// images_background/ and images_evaluation/ (both merged when both exist).
// Classes come from the split's lists (splits.hpp: spec.split_file, the shipped "vinyals" lists,
// a folder's, else <root>/splits/<spec.split>.txt when present, else every character). A split line is "<Alphabet>/<characterNN>/rotDDD" (DDD one
// of 000, 090, 180, 270) or "<Alphabet>/<characterNN>" (rot000, plus the three rotations when
// spec.rotations). Without a split file each character gives rot000, and with
// spec.rotations also rot090, rot180 and rot270. Class names always end in "/rotDDD".
// Images are resized to spec.height x spec.width, rotated counter-clockwise (torch.rot90 as
// in Snell et al.'s reference code), and inverted (255 - p) when spec.invert.
#pragma once

#include "decode.hpp"
#include "image_set.hpp"

namespace protonet {

FilePlan plan_omniglot(const DatasetSpec& spec);
ImageSet load_omniglot(const DatasetSpec& spec);

}  // namespace protonet
