// What ProtoNet's commands draw their episodes from: the data sets loaded with errors that name
// the set, the validation images held out of the training classes, episode shapes fitted to
// the classes a set has, episodes drawn from a generator, and an episode made ready for the
// device by the data workers.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <mlh/plugin.hpp>
#include <mlh/runtime/apply_plan.hpp>

#include "config.hpp"
#include "data/image_set.hpp"
#include "episode_fit.hpp"
#include "episode_sampler.hpp"

namespace protonet {

// Loads a dataset; the plugin passes load_dataset, tests an in-memory fixture.
using DatasetLoader = std::function<ImageSet(const DatasetSpec&)>;

// Decodes image files as `spec` says (height, width, channels, invert) into one ImageSet in
// file order (classify's queries); the plugin passes the data library's decoder.
using ImageDecoder = std::function<ImageSet(const std::vector<std::string>& files, const DatasetSpec& spec)>;

// The classes a dataset holds, without decoding it; the plugin passes dataset_class_names.
using ClassLister = std::function<std::vector<std::string>(const DatasetSpec&)>;

// The plugin's ways to read images, handed to every command.
struct DataSources {
  DatasetLoader load;
  ImageDecoder decode;       // null in a build without an image decoder
  ClassLister list_classes;  // null: the classes of the set `load` gives
};

// "5-way 5-shot 15-query".
std::string shape_name(const EpisodeShape& s);

// `spec`'s images; a data error is a DataError naming the set and the file, an empty set
// MLH_ERR_INVALID_ARGUMENT, both naming `what` set ("training", "test", ...).
ImageSet load_checked(const DatasetLoader& load, const DatasetSpec& spec, const std::string& what);

// The names of the classes `set` has images of, in label order.
std::vector<std::string> present_classes(const ImageSet& set);

// The classes of `spec`'s set (data.list_classes, else by loading it); a data error is an
// DataError naming `what` set.
std::vector<std::string> classes_of(const DataSources& data, const DatasetSpec& spec, const std::string& what);

// A few-shot test on classes the model was trained on measures memory, not few-shot
// learning: `other` (the "test" or "validation" classes) sharing classes with `trained`
// (by class_identity: an Omniglot character in any rotation) is an
// mlh::Error(MLH_ERR_INVALID_ARGUMENT) that says how to give disjoint splits, or a warning
// with data.allow_class_overlap. Returns how many classes are shared (allowed).
size_t check_disjoint_classes(const mlh::RunContext& ctx, const Config& cfg, const std::vector<std::string>& trained,
                              const std::vector<std::string>& other, const std::string& what);

// The test classes must not be training classes (check_disjoint_classes). One side's classes
// are `known` (loaded by the command: training's before training, test's before eval); the
// other side's are listed from the config. At training the test data is read whole: test data
// that exists but does not read (a class it lacks, a file that does not decode) is the error
// eval would give; test data whose root
// does not exist yet (it may come before eval) is warned about, and eval checks again. At
// eval, training data that cannot be listed is warned about.
void check_test_classes(const mlh::RunContext& ctx, const Config& cfg, const DataSources& data,
                        const std::vector<std::string>& known, bool known_are_trained);

// How many of a class's `images` validation holds out: `fraction` of them, at least one and
// all but one where the class has two or more, none otherwise.
int64_t held_out_count(int64_t images, double fraction);
// Holds out held_out_count() of each class's images: the training and the validation set, in
// the set's order.
std::pair<ImageSet, ImageSet> hold_out(const ImageSet& set, double fraction, uint64_t seed);
// `set` split by class: `count` of its classes, spread evenly over its class order, make the
// second set, the rest the first. Both keep every class name, so labels stay valid.
std::pair<ImageSet, ImageSet> split_off_classes(const ImageSet& set, size_t count);

// The training set and the validation set the config names: the validation classes' own set,
// else `cfg.val_fraction` of each training class held out; no validation set (empty) with
// data.trainval.
struct TrainingSets {
  ImageSet train, val;
};
// The held-out share fitted to the data: where data.val_fraction of a typical (median) class
// would leave validation too few images for a test_shot-shot episode with a query image, and
// the class has room for that and a training episode, the share that gives it (`why` says so).
double fitted_val_fraction(const std::vector<ClassSize>& classes, const Config& cfg, std::string* why);
// `log` hears of a changed validation share (fitted_to_data decides what it is).
TrainingSets load_training_sets(const Config& cfg, const DataSources& data,
                                const std::function<void(const std::string&)>& log = nullptr);

// The classes `set` has images of, with how many each.
std::vector<ClassSize> class_sizes(const ImageSet& set);

// The episodes `set` can make, fitted to its classes and images (episode_fit.hpp): each change
// logged once, the classes left out named in a warning; a set that makes no episode is a
// DataError. With split lists (spec.splits given) the protocol is the user's: fewer classes
// than the way is an error naming the split and its lists, not a smaller way.
// Under data.strict (`strict`) a change or a class left out is a DataError too; so is a change
// of a field the user set, where `fields` name this set's own episodes (`own_fields`: false for
// validation, whose episodes borrow the test's fields and are fitted to the held-out images).
EpisodeShape fit_shape(const mlh::RunContext& ctx, const EpisodeShape& asked, const ImageSet& set,
                       const ShapeFields& fields, const std::string& what, const DatasetSpec& spec, bool strict,
                       bool own_fields = true);

// A config value changed to fit the data (`change` says how): a warning where it was the
// default, a DataError naming `field` where the user set it (and `binding`: the field is the
// value's own) or data.strict (`strict`) is on.
void fitted_to_data(const mlh::RunContext& ctx, bool strict, const std::string& field, const std::string& change,
                    bool binding = true);

// Before a folder dataset (data.format=folder) is read: one line saying how its images are
// stored and how the run reads them (a warning where they are resized or converted by the
// defaults, which the user may not know), and the files it skips (a warning; a DataError
// under data.strict). Other formats: nothing.
void report_folder_data(const mlh::RunContext& ctx, const Config& cfg, const DatasetSpec& spec, const std::string& what);

// The config fields of the training episodes' shape and of the validation and test ones'.
const ShapeFields& train_shape_fields();
const ShapeFields& test_shape_fields();

// `n` episodes of `shape`, drawn in order from `rng`.
std::vector<EpisodeIndices> sample_episodes(const EpisodeSampler& sampler, const EpisodeShape& shape, int64_t n,
                                            std::mt19937_64& rng);

// `n` training episodes of `shape` drawn from `set`.
std::vector<Episode> training_episodes(const ImageSet& set, const EpisodeShape& shape, int n, uint64_t seed);

// An episode as the data workers hand it over: page-locked when the plan pins batches for a
// CUDA device, so that pinning runs in the workers and the copy in the step does not block.
Episode ready_for(const mlh::rt::RuntimePlan& plan, Episode e);

// A synthetic set of `classes` x `per_class` noise images, 28x28 grayscale unless given:
// benchmarks time the model, not the data.
ImageSet synthetic_set(int classes, int per_class, int height = 28, int width = 28, int channels = 1);

}  // namespace protonet
