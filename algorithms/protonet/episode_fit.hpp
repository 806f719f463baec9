// Episodes fitted to the data a run has: the way, shot and query the config asks for, made
// smaller where the set's classes are fewer or hold fewer images, each change said once with
// the value used and the config field that asks for it.
//
// The order, so that a few-shot test stays what it claims as long as the data allow:
//   1. the way: at most the number of classes that have shot + 1 images (a support set and
//      one query image each);
//   2. the query: at most what the smallest of those classes has beyond the shot;
//   3. only where fewer than two classes have shot + 1 images, the shot: the largest that two
//      classes still have room for, with one query image.
// Classes with fewer images than the fitted shot + query are left out of the episodes (named
// in `dropped`). A set where fewer than two classes have two images makes no episode: an
// error naming the set and what it would need.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config.hpp"  // EpisodeShape, and data/image_set.hpp's ClassSize

namespace protonet {

// The config fields of an episode shape, for messages ("train_way", "train_shot", ...).
struct ShapeFields {
  std::string way, shot, query;
};

struct EpisodeFit {
  EpisodeShape shape;                // the episodes the run will draw
  std::vector<std::string> changes;  // one line per field changed, with the value used and how to ask for it
  std::vector<std::string> changed_fields;  // the config field of each line of `changes`
  std::vector<ClassSize> dropped;    // classes with fewer than shape.shot + shape.query images
};

// `what` names the set in messages ("training", "validation", "test"). Throws
// mlh::DataError when no episode can be made.
EpisodeFit fit_episodes(const std::vector<ClassSize>& classes, const EpisodeShape& asked, const ShapeFields& fields,
                        const std::string& what);

}  // namespace protonet
