// ProtoNet's describe_run (ABI 1.1): the model and the plan fields a run of ctx's command,
// config and plan uses, without running it.
#pragma once

#include <string>

#include <mlh/plugin.hpp>

namespace protonet {

std::string describe_run(const mlh::RunContext& ctx);

}  // namespace protonet
