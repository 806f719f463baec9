#include "config.hpp"

#include <mlh/plugin.hpp>

namespace protonet {

using nlohmann::json;

const char* config_schema_json() {
  return R"json({
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "data": {
      "type": "object",
      "additionalProperties": false,
      "properties": {
        "format": {"enum": ["idx", "omniglot", "miniimagenet", "folder"]},
        "root": {"type": "string", "description": "idx: the images file; else the data folder"},
        "labels": {"type": "string", "description": "idx: the labels file"},
        "train_classes": {"type": "array", "items": {"type": "integer", "minimum": 0}, "description": "idx: labels to train on (empty: all)"},
        "val_classes": {"type": "array", "items": {"type": "integer", "minimum": 0}, "description": "idx: validate on these labels of the training file (class-disjoint); empty: hold out val_fraction of each training class. omniglot/miniimagenet use their 'val' split"},
        "val_fraction": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "test_root": {"type": "string", "description": "idx: the test images file; folder: the test folder; omniglot/miniimagenet: the folder holding the test split, '' (or the idx default) = root"},
        "test_labels": {"type": "string"},
        "test_classes": {"type": "array", "items": {"type": "integer", "minimum": 0}},
        "height": {"type": "integer", "minimum": 8},
        "width": {"type": "integer", "minimum": 8},
        "channels": {"enum": [1, 3]},
        "invert": {"type": "boolean"},
        "rotations": {"type": "boolean", "description": "omniglot: rotated characters as extra training classes (a split file's rotDDD lines say it per class)"},
        "splits": {"type": "string", "description": "omniglot/miniimagenet: which classes each split holds: 'vinyals' (Omniglot's standard split, shipped), 'ravi' (miniImageNet's, shipped), a folder of train/val/test[/trainval] lists (.txt for Omniglot, .csv for miniImageNet), or '' for the dataset's own (<root>/splits/<split>.txt, <root>/<split>.csv)"},
        "trainval": {"type": "boolean", "description": "train on the training and validation classes together, without validation or early stopping, for a fixed number of epochs (the reference's retraining for the reported test figures)"},
        "allow_class_overlap": {"type": "boolean", "description": "let the test (or validation) classes include training classes; refused otherwise, since a few-shot test on trained classes measures memory"},
        "cache_dir": {"type": "string"}
      }
    },
    "preset": {"type": "string", "description": "a preset of this algorithm: full, reduced, or the reference protocols omniglot-1shot, omniglot-5shot, miniimagenet-1shot, miniimagenet-5shot"},
    "train_way": {"type": "integer", "minimum": 2, "description": "classes per training episode (capped at the classes available, except with data.splits, where too few classes is an error)"},
    "train_shot": {"type": "integer", "minimum": 1},
    "train_query": {"type": "integer", "minimum": 1},
    "test_way": {"type": "integer", "minimum": 2},
    "test_shot": {"type": "integer", "minimum": 1},
    "test_query": {"type": "integer", "minimum": 1},
    "epochs": {"type": "integer", "minimum": 1},
    "episodes_per_epoch": {"type": "integer", "minimum": 1},
    "val_episodes": {"type": "integer", "minimum": 1},
    "patience": {"type": "integer", "minimum": 1, "description": "epochs without a better validation loss before stopping"},
    "lr": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
    "lr_halve_every": {"type": "integer", "minimum": 1, "description": "episodes"},
    "distance": {"enum": ["euclidean", "cosine"]},
    "cosine_scale": {"type": "number", "exclusiveMinimum": 0, "description": "logits = scale * cosine similarity"},
    "width": {"type": "integer", "minimum": 1, "description": "Conv-4 filters per block"},
    "micro_batch": {"type": "integer", "minimum": 0, "description": "training queries per micro-batch from the start; 0: the whole episode (out of memory halves it)"},
    "seed": {"type": "integer", "minimum": 0},
    "eval_episodes": {"type": "integer", "minimum": 1},
    "keep_checkpoints": {"type": "integer", "minimum": 1},
    "support_dir": {"type": "string", "description": "classify: one subfolder of images per class"},
    "query": {"type": ["string", "array"], "items": {"type": "string"}, "description": "classify: a folder of images, or image files"},
    "checkpoint": {"enum": ["best", "latest"]}
  }
})json";
}

const char* config_defaults_json() {
  return R"json({
  "data": {
    "format": "idx",
    "root": "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz",
    "labels": "/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz",
    "train_classes": [0, 1, 2, 3, 4],
    "val_classes": [],
    "val_fraction": 0.1,
    "test_root": "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz",
    "test_labels": "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz",
    "test_classes": [5, 6, 7, 8, 9],
    "height": 28, "width": 28, "channels": 1,
    "invert": false, "rotations": false, "splits": "", "trainval": false, "allow_class_overlap": false,
    "cache_dir": ""
  },
  "train_way": 60, "train_shot": 5, "train_query": 5,
  "test_way": 5, "test_shot": 5, "test_query": 15,
  "epochs": 100, "episodes_per_epoch": 100, "val_episodes": 100, "patience": 10,
  "lr": 0.001, "lr_halve_every": 2000,
  "distance": "euclidean", "cosine_scale": 10.0,
  "width": 64, "micro_batch": 0, "seed": 0, "eval_episodes": 1000, "keep_checkpoints": 3,
  "support_dir": "", "query": "", "checkpoint": "best"
})json";
}

// Conv-4 at width 64 on 1-channel input has 111,936 parameters (3 channels: 113,088). Every
// preset keeps the reference's Conv-4 (the accuracy ProtoNet is held to is the reference's,
// and 112k parameters is small for any device); full and reduced size the schedule, the
// others are the reference's protocols (Snell et al. 2017 and their code,
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
          {"reduced", {{"width", 64}, {"$parameters", 111936}, {"train_way", 20}, {"train_query", 5}, {"epochs", 20},
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

namespace {

std::vector<int32_t> ints(const json& j) { return j.get<std::vector<int32_t>>(); }

}  // namespace

Config parse_config(const json& user) {
  try {
    json cfg = json::parse(config_defaults_json());
    cfg.merge_patch(user);
    Config c;
    const json& d = cfg.at("data");
    DatasetSpec base;
    base.format = d.at("format").get<std::string>();
    base.height = d.at("height").get<int>();
    base.width = d.at("width").get<int>();
    base.channels = d.at("channels").get<int>();
    base.invert = d.at("invert").get<bool>();
    base.cache_dir = d.at("cache_dir").get<std::string>();
    base.splits = d.at("splits").get<std::string>();
    c.trainval = d.at("trainval").get<bool>();
    c.allow_class_overlap = d.at("allow_class_overlap").get<bool>();
    if (!base.splits.empty() && base.format != "omniglot" && base.format != "miniimagenet")
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "config field 'data.splits': split lists are for the omniglot and "
                                                 "miniimagenet formats, not " + base.format +
                                                 " (idx: data.train_classes, data.val_classes, data.test_classes)");
    const bool split_format = base.format == "omniglot" || base.format == "miniimagenet";

    c.train_data = base;
    c.train_data.root = d.at("root").get<std::string>();
    c.train_data.labels = d.at("labels").get<std::string>();
    c.train_data.classes = ints(d.at("train_classes"));
    c.train_data.rotations = d.at("rotations").get<bool>();
    c.train_data.split = split_format ? (c.trainval ? "trainval" : "train") : "";

    c.val_fraction = d.at("val_fraction").get<double>();
    const std::vector<int32_t> val_classes = ints(d.at("val_classes"));
    c.val_data = c.train_data;
    c.val_data.rotations = false;
    if (c.trainval) {
      // Retraining: the validation classes join the training ones, and nothing is held out.
      c.validate = false;
      if (!split_format && !val_classes.empty() && !c.train_data.classes.empty())
        c.train_data.classes.insert(c.train_data.classes.end(), val_classes.begin(), val_classes.end());
    } else if (split_format) {
      c.has_val_classes = true;
      c.val_data.split = "val";
    } else if (!val_classes.empty()) {
      c.has_val_classes = true;
      c.val_data.classes = val_classes;
    }

    c.test_data = base;
    c.test_data.root = d.at("test_root").get<std::string>();
    c.test_data.labels = d.at("test_labels").get<std::string>();
    c.test_data.classes = ints(d.at("test_classes"));
    if (split_format) {
      // The default test_root is Fashion-MNIST's test file, which means nothing to a dataset
      // whose test classes are a split of the same folder: that default and '' both mean root.
      const json defaults = json::parse(config_defaults_json());
      if (c.test_data.root.empty() || c.test_data.root == defaults["data"]["test_root"]) c.test_data.root = c.train_data.root;
      c.test_data.split = "test";
    }

    c.train = {cfg.at("train_way").get<int>(), cfg.at("train_shot").get<int>(), cfg.at("train_query").get<int>()};
    c.test = {cfg.at("test_way").get<int>(), cfg.at("test_shot").get<int>(), cfg.at("test_query").get<int>()};
    c.epochs = cfg.at("epochs").get<int64_t>();
    c.episodes_per_epoch = cfg.at("episodes_per_epoch").get<int64_t>();
    c.val_episodes = cfg.at("val_episodes").get<int64_t>();
    c.patience = cfg.at("patience").get<int64_t>();
    c.lr = cfg.at("lr").get<double>();
    c.lr_halve_every = cfg.at("lr_halve_every").get<int64_t>();
    c.distance = cfg.at("distance").get<std::string>();
    c.cosine_scale = cfg.at("cosine_scale").get<double>();
    c.width = cfg.at("width").get<int64_t>();
    c.micro_batch = cfg.at("micro_batch").get<int64_t>();
    if (c.micro_batch < 0) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "config field 'micro_batch': expected an integer >= 0");
    c.seed = cfg.at("seed").get<uint64_t>();
    c.eval_episodes = cfg.at("eval_episodes").get<int64_t>();
    c.keep_checkpoints = cfg.at("keep_checkpoints").get<int>();
    c.support_dir = cfg.at("support_dir").get<std::string>();
    const json& q = cfg.at("query");
    if (q.is_string()) {
      if (!q.get<std::string>().empty()) c.query = {q.get<std::string>()};
    } else {
      c.query = q.get<std::vector<std::string>>();
    }
    c.checkpoint = cfg.at("checkpoint").get<std::string>();
    if (c.distance != "euclidean" && c.distance != "cosine")
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "config field 'distance': expected euclidean or cosine");
    return c;
  } catch (const json::exception& e) {
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, std::string("protonet config: ") + e.what());
  }
}

}  // namespace protonet
