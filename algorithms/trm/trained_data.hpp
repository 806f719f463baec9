// Where a command on a trained run (eval, solve; train --resume too) finds the data the run
// trained on, from whatever directory it runs in. The command's config is the trained run's,
// reloaded, so its data.dir is what training was given, perhaps relative to another
// directory: while it still says that (or nothing), the run's own data are meant, and
// model.json says where they are (absolute since it records them so; an older run's relative
// path is tried against the current directory, then against the run folder's parent and each
// folder above it). A data.dir (data.text_file) set to something else names other data, read
// as given. Free of LibTorch.
#pragma once

#include <string>

#include "config.hpp"
#include "data/dataset.hpp"
#include "model_record.hpp"

namespace trm {

// The dataset folder (puzzle runs). Not found: an mlh::DataError naming what model.json
// records, every place tried, and the config field that names another.
std::string trained_dataset_dir(const Config& cfg, const ModelRecord& record, const std::string& trained_run_dir);
// The corpus (text runs), found the same way.
std::string trained_text_file(const Config& cfg, const ModelRecord& record, const std::string& trained_run_dir);

// The test split of `dir`, checked to fit `model`: the same sequence length and vocabulary,
// and puzzle identifiers its embedding has (else an mlh::Error naming data.dir and both).
DatasetSplit open_test_split_for(const std::string& dir, const ModelConfig& model);

}  // namespace trm
