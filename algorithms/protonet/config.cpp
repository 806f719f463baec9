#include "config.hpp"

#include <mlh/config_table.hpp>
#include <mlh/plugin.hpp>

namespace protonet {

using nlohmann::json;

namespace {

// Where the default data live: Debian's dataset-fashion-mnist package (scripts/setup.sh).
const std::string kFashion = "/usr/share/datasets/fashion-mnist/";

}  // namespace

// Data fields fill train_data (and test_data's own); parse_config derives the validation and
// test sets from them.
const mlh::ConfigTable<Config>& config_table() {
  static const auto table =
      mlh::ConfigTable<Config>(MLH_PLUGIN_NAME)  // the plugin's name (CMakeLists.txt)
          .field("data.format", MLH_MEMBER(train_data.format), "idx", mlh::one_of({"idx", "omniglot", "miniimagenet", "folder"}),
                 "the data's layout: IDX files (MNIST, Fashion-MNIST), Omniglot's or miniImageNet's folders, or a "
                 "folder with one subfolder of images per class")
          .field("data.root", MLH_MEMBER(train_data.root), kFashion + "train-images-idx3-ubyte.gz", mlh::path(),
                 "idx: the training images file; else the data folder")
          .field("data.labels", MLH_MEMBER(train_data.labels), kFashion + "train-labels-idx1-ubyte.gz", mlh::path(),
                 "idx: the training labels file")
          .field("data.train_classes", MLH_MEMBER(train_data.classes), {0, 1, 2, 3, 4}, mlh::FieldRule().items_at_least(0),
                 "idx: the labels to train on (empty: all)")
          .field("data.val_classes", MLH_MEMBER(val_classes), json::array(), mlh::FieldRule().items_at_least(0),
                 "idx: validate on these labels of the training file (class-disjoint); empty: hold out "
                 "val_fraction of each training class. omniglot/miniimagenet use their 'val' split")
          .field("data.val_fraction", MLH_MEMBER(val_fraction), 0.1, mlh::above(0).below(1).speed_neutral(),
                 "idx/folder without val_classes: the share of each training class's images held out for validation")
          .field("data.test_root", MLH_MEMBER(test_data.root), kFashion + "t10k-images-idx3-ubyte.gz",
                 mlh::path().speed_neutral(),
                 "idx: the test images file; folder: the test folder; omniglot/miniimagenet: the folder holding the "
                 "test split, '' (or the idx default) = root")
          .field("data.test_labels", MLH_MEMBER(test_data.labels), kFashion + "t10k-labels-idx1-ubyte.gz",
                 mlh::path().speed_neutral(),
                 "idx: the test labels file")
          .field("data.test_classes", MLH_MEMBER(test_data.classes), {5, 6, 7, 8, 9},
                 mlh::FieldRule().items_at_least(0).speed_neutral(),
                 "idx: the labels to test on (empty: all); class-disjoint from training unless allow_class_overlap")
          .field("data.height", MLH_MEMBER(train_data.height), 28, mlh::at_least(8).unit("pixels"),
                 "images are resized to this height")
          .field("data.width", MLH_MEMBER(train_data.width), 28, mlh::at_least(8).unit("pixels"),
                 "images are resized to this width")
          .field("data.channels", MLH_MEMBER(train_data.channels), 1, mlh::one_of({1, 3}),
                 "1: grayscale, 3: RGB (images are converted on loading)")
          .field("data.invert", MLH_MEMBER(train_data.invert), false, mlh::any_value(),
                 "invert the pixels (Omniglot: white strokes on black, as the reference code reads it)")
          .field("data.rotations", MLH_MEMBER(train_data.rotations), false, mlh::any_value(),
                 "omniglot: rotated characters as extra training classes (a split file's rotDDD lines say it per class)")
          .field("data.splits", MLH_MEMBER(train_data.splits), "", mlh::any_value(),
                 "omniglot/miniimagenet: which classes each split holds: 'vinyals' (Omniglot's standard split, "
                 "shipped), 'ravi' (miniImageNet's, shipped), a folder of train/val/test[/trainval] lists (.txt for "
                 "Omniglot, .csv for miniImageNet), or '' for the dataset's own (<root>/splits/<split>.txt, "
                 "<root>/<split>.csv)")
          .field("data.trainval", MLH_MEMBER(trainval), false, mlh::any_value(),
                 "train on the training and validation classes together, without validation or early stopping, for "
                 "a fixed number of epochs (the reference's retraining for the reported test figures)")
          .field("data.allow_class_overlap", MLH_MEMBER(allow_class_overlap), false, mlh::speed_neutral(),
                 "let the test (or validation) classes include training classes; refused otherwise, since a few-shot "
                 "test on trained classes measures memory")
          .field("data.strict", MLH_MEMBER(strict_data), false, mlh::speed_neutral(),
                 "take the data exactly as configured: an episode shape, validation share or class the data would "
                 "make the run change or leave out, and a file in a class folder that is not an image, are errors "
                 "instead of warnings")
          .field("data.cache_dir", MLH_MEMBER(train_data.cache_dir), "", mlh::path().speed_neutral(),
                 "keep decoded image sets here and reuse them while the source files are unchanged ('': no cache)")
          .host_field("preset", "string",
                      "a preset of this algorithm: full, reduced, or the reference protocols omniglot-1shot, "
                      "omniglot-5shot, miniimagenet-1shot, miniimagenet-5shot")
          .field("train_way", MLH_MEMBER(train.way), 5, mlh::at_least(2).unit("classes"),
                 "classes per training episode (5: the default data's training classes; the reference presets train "
                 "60-, 30- or 20-way; capped at the classes available, except with data.splits, where too few "
                 "classes is an error)")
          .field("train_shot", MLH_MEMBER(train.shot), 5, mlh::at_least(1).unit("images per class"),
                 "support images per class in a training episode")
          .field("train_query", MLH_MEMBER(train.query), 5, mlh::at_least(1).unit("images per class"),
                 "query images per class in a training episode")
          .field("test_way", MLH_MEMBER(test.way), 5, mlh::at_least(2).unit("classes").speed_neutral(),
                 "classes per validation and test episode")
          .field("test_shot", MLH_MEMBER(test.shot), 5, mlh::at_least(1).unit("images per class").speed_neutral(),
                 "support images per class in a validation and test episode")
          .field("test_query", MLH_MEMBER(test.query), 15, mlh::at_least(1).unit("images per class").speed_neutral(),
                 "query images per class in a validation and test episode")
          .field("epochs", MLH_MEMBER(epochs), 100, mlh::at_least(1).unit("epochs").speed_neutral(),
                 "the most epochs to train (early stopping may end sooner)")
          .field("episodes_per_epoch", MLH_MEMBER(episodes_per_epoch), 100,
                 mlh::at_least(1).unit("episodes").speed_neutral(),
                 "training episodes per epoch; validation runs after each epoch")
          .field("val_episodes", MLH_MEMBER(val_episodes), 100, mlh::at_least(1).unit("episodes").speed_neutral(),
                 "validation episodes after each epoch")
          .field("patience", MLH_MEMBER(patience), 10, mlh::at_least(1).unit("epochs").speed_neutral(),
                 "epochs without a better validation loss before stopping")
          .field("lr", MLH_MEMBER(lr), 0.001, mlh::above(0).max(1).speed_neutral(), "Adam's learning rate")
          .field("lr_halve_every", MLH_MEMBER(lr_halve_every), 2000, mlh::at_least(1).unit("episodes").speed_neutral(),
                 "the learning rate halves after every this many training episodes")
          .field("distance", MLH_MEMBER(distance), "euclidean", mlh::one_of({"euclidean", "cosine"}),
                 "how queries are compared with the class prototypes: squared Euclidean distance or scaled cosine "
                 "similarity")
          .field("cosine_scale", MLH_MEMBER(cosine_scale), 10.0, mlh::above(0),
                 "distance cosine: logits = scale x cosine similarity")
          .field("model.encoder", MLH_MEMBER(encoder), "conv4", mlh::one_of({"conv4", "resnet12", "python"}),
                 "the encoder: Conv-4 (Snell et al.'s, 112k parameters at width 64), ResNet-12 (MetaOptNet's and "
                 "FEAT's, 12.4M parameters at width 64: slower, more accurate on natural images), or python: your "
                 "torch.nn.Module, named by model.module (docs/your-network-in-pytorch.md)")
          .field("model.module", MLH_MEMBER(python_module), "", mlh::path(),
                 "model.encoder=python: path/to/file.py:ClassName, built with in_channels and model.kwargs; it "
                 "takes images (batch x channels x height x width) and returns embeddings (batch x D)")
          .field("model.kwargs", MLH_MEMBER(python_kwargs), json::object(), mlh::any_value(),
                 "model.encoder=python: more keyword arguments of your class, a JSON object")
          .field("model.drop_rate", MLH_MEMBER(drop_rate), 0.1, mlh::at_least(0).below(1),
                 "resnet12: in training, dropout after stages 1 and 2 and DropBlock (5x5 blocks) after stages 3 and 4 "
                 "at this rate (0: none); conv4 has none")
          .field("width", MLH_MEMBER(width), 64, mlh::at_least(1).unit("filters"),
                 "conv4: filters per block; resnet12: the first stage's channels, the stages having width x (1, 2.5, "
                 "5, 10) (64: 64-160-320-640), so an even number")
          .field("micro_batch", MLH_MEMBER(micro_batch), 0, mlh::at_least(0).unit("queries"),
                 "training queries per micro-batch from the start, gradients accumulated; 0: the whole episode (out "
                 "of memory halves it)")
          .field("seed", MLH_MEMBER(seed), 0, mlh::at_least(0).speed_neutral(),
                 "seeds the episodes' sampling and the initial weights")
          .field("eval_episodes", MLH_MEMBER(eval_episodes), 1000, mlh::at_least(1).unit("episodes").speed_neutral(),
                 "eval: test episodes whose mean accuracy (and 95% interval) is reported")
          .field("benchmark.compare_encoders", MLH_MEMBER(compare_encoders), false, mlh::speed_neutral(),
                 "benchmark: also time Conv-4 and ResNet-12 training the same 5-way 1-shot episode on 28x28x1 and on "
                 "84x84x3 images, in images/s with their ratio (a minute or two on a CPU)")
          .field("keep_checkpoints", MLH_MEMBER(keep_checkpoints), 3,
                 mlh::at_least(1).unit("checkpoints").speed_neutral(),
                 "the newest checkpoints kept on disk (the best one is kept besides)")
          .field("support_dir", MLH_MEMBER(support_dir), "", mlh::path().speed_neutral(),
                 "classify: one subfolder of images per class, its name the class's")
          .field("query", MLH_MEMBER(query), "", mlh::path().or_one_string().speed_neutral(),
                 "classify: a folder of images, or image files")
          .field("checkpoint", MLH_MEMBER(checkpoint), "best", mlh::one_of({"best", "latest"}).speed_neutral(),
                 "eval/classify/forward: the checkpoint with the best validation loss, or the newest")
          .field("forward.inputs", MLH_MEMBER(forward_inputs), "", mlh::path().speed_neutral(),
                 "forward: a safetensors file whose tensor 'images' (float, batch x channels x height x width) "
                 "is embedded; the embeddings go to the command folder's outputs.safetensors");
  return table;
}

const char* config_schema_json() { return config_table().schema_text().c_str(); }
const char* config_defaults_json() { return config_table().defaults_text().c_str(); }

// Conv-4 at width 64 on 1-channel input has 111,936 parameters (3 channels: 113,088). Every
// preset keeps the reference's Conv-4 as its encoder (the accuracy ProtoNet is held to is the
// reference's, and 112k parameters is small for any device), and "$parameters" is Conv-4's:
// the host prints it only for a plan whose algorithm does not describe the run's model, and
// ProtoNet's describe_run does, from the encoder the config builds (with --set
// model.encoder=resnet12 the plan says ResNet-12's 12,424,320; host_test checks both). Full
// and reduced size the schedule, the others are the reference's protocols (Snell et al. 2017 and their code,
// github.com/jakesnell/prototypical-networks):
//   Omniglot: the Vinyals split with rotations, 28x28 inverted, 60-way training with 5 queries
//   at the shot tested, 5-way 15-query testing over 1000 episodes; epochs of 100 episodes,
//   lr 1e-3 halved every 20 epochs, early stopping at the 201st epoch without a better
//   validation loss (run_train.py's patience 200, which stops when more than 200 epochs have
//   passed: wait > patience; ours stops when bad_epochs reaches patience, hence 201);
//   --set test_way=20 for the 20-way figures.
//   miniImageNet: the Ravi split, 84x84 RGB, 30-way 1-shot or 20-way 5-shot training with 15
//   queries, 5-way testing over 600 episodes (the paper, section 3.2).
// data.root is where the reference keeps the data (data/omniglot/data, data/miniImagenet).
namespace {

// The schedule every reference protocol shares, and the data and episode shapes of each.
json reference_protocol(const json& data, int train_way, int shot, int query, int eval_episodes, int64_t parameters) {
  return {{"$parameters", parameters}, {"width", 64}, {"data", data},
          {"train_way", train_way}, {"train_shot", shot}, {"train_query", query},
          {"test_way", 5}, {"test_shot", shot}, {"test_query", 15},
          {"epochs", 10000}, {"episodes_per_epoch", 100}, {"val_episodes", 100}, {"patience", 201},
          {"lr", 0.001}, {"lr_halve_every", 2000}, {"eval_episodes", eval_episodes}};
}

json build_presets() {
  const json omniglot = {{"format", "omniglot"}, {"root", "data/omniglot/data"}, {"test_root", ""}, {"splits", "vinyals"},
                         {"height", 28}, {"width", 28}, {"channels", 1}, {"invert", true}};
  const json miniimagenet = {{"format", "miniimagenet"}, {"root", "data/miniImagenet"}, {"test_root", ""},
                             {"splits", "ravi"}, {"height", 84}, {"width", 84}, {"channels", 3}, {"invert", false}};
  return {{"full", {{"width", 64}, {"$parameters", 111936}}},
          {"reduced", {{"width", 64}, {"$parameters", 111936}, {"train_query", 5}, {"epochs", 20},
                       {"episodes_per_epoch", 50}, {"val_episodes", 50}, {"patience", 5}, {"eval_episodes", 300}}},
          {"omniglot-1shot", reference_protocol(omniglot, 60, 1, 5, 1000, 111936)},
          {"omniglot-5shot", reference_protocol(omniglot, 60, 5, 5, 1000, 111936)},
          {"miniimagenet-1shot", reference_protocol(miniimagenet, 30, 1, 15, 600, 113088)},
          {"miniimagenet-5shot", reference_protocol(miniimagenet, 20, 5, 15, 600, 113088)}};
}

}  // namespace

const char* presets_json() {
  static const std::string text = build_presets().dump();
  return text.c_str();
}

Config parse_config(const json& user) {
  Config c = config_table().parse(user);
  if (c.encoder == "resnet12" && c.width % 2 != 0)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "config field 'width': " + std::to_string(c.width) +
                                               " gives ResNet-12 (model.encoder resnet12) a stage of width x 2.5 = " +
                                               std::to_string(c.width * 5 / 2) + ".5 channels; use an even width "
                                               "(64 gives 64-160-320-640)");
  if (c.encoder == "python" && c.python_module.empty())
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "config field 'model.module': model.encoder=python needs your module: "
                                               "path/to/file.py:ClassName (docs/your-network-in-pytorch.md)");
  if (c.encoder != "python" && !c.python_module.empty())
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "config field 'model.module': names a Python encoder: set "
                                               "model.encoder=python too (model.encoder is '" + c.encoder + "')");
  if (!c.python_kwargs.is_object())
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "config field 'model.kwargs': " + c.python_kwargs.dump() +
                                               " is not a JSON object of keyword arguments");
  DatasetSpec& train = c.train_data;
  if (!train.splits.empty() && train.format != "omniglot" && train.format != "miniimagenet")
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "config field 'data.splits': split lists are for the omniglot and "
                                               "miniimagenet formats, not " + train.format +
                                               " (idx: data.train_classes, data.val_classes, data.test_classes)");
  const bool split_format = train.format == "omniglot" || train.format == "miniimagenet";
  train.split = split_format ? (c.trainval ? "trainval" : "train") : "";
  // Derived, not fields: every run validates but a retraining on train + val (data.trainval);
  // a validation set of its own classes is found below.
  c.validate = !c.trainval;
  c.has_val_classes = false;

  // The validation and test sets read the data as training does; rotations are training's.
  c.val_data = train;
  c.val_data.rotations = false;
  if (c.trainval) {
    // Retraining: the validation classes join the training ones, and nothing is held out.
    if (!split_format && !c.val_classes.empty() && !train.classes.empty())
      train.classes.insert(train.classes.end(), c.val_classes.begin(), c.val_classes.end());
  } else if (split_format) {
    c.has_val_classes = true;
    c.val_data.split = "val";
  } else if (!c.val_classes.empty()) {
    c.has_val_classes = true;
    c.val_data.classes = c.val_classes;
  }

  DatasetSpec test = train;
  test.rotations = false;
  test.root = c.test_data.root;
  test.labels = c.test_data.labels;
  test.classes = c.test_data.classes;
  test.split = "";
  if (split_format) {
    // The default test_root is Fashion-MNIST's test file, which means nothing to a dataset
    // whose test classes are a split of the same folder: that default and '' both mean root.
    if (test.root.empty() || test.root == config_table().defaults()["data"]["test_root"]) test.root = train.root;
    test.split = "test";
  }
  c.test_data = test;
  return c;
}

}  // namespace protonet
