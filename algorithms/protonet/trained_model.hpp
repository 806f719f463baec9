// A trained run's weights loaded for the commands on it (eval, classify).
#pragma once

#include <mlh/plugin.hpp>
#include <mlh/runtime/checkpoint.hpp>

#include "trainer.hpp"

namespace protonet {

// The run folder's trained weights into `l`: the best checkpoint, or the newest with
// cfg.checkpoint "latest". None: mlh::Error(MLH_ERR_IO) naming the folder.
mlh::rt::LoadedCheckpoint load_trained(const mlh::RunContext& ctx, const Config& cfg, Trainer& l);

}  // namespace protonet
