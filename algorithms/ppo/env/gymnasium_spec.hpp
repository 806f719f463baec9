// What a Gymnasium environment is (config gymnasium.*, read into Config::gymnasium by the
// config table; GymnasiumEnv starts one from it). No defaults: the table declares them.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ppo {

struct GymnasiumSpec {
  std::string id;                        // a registered id, or "module:Class"
  nlohmann::json kwargs;                 // a JSON object: gymnasium.make's (or the class's) keyword arguments
  std::vector<nlohmann::json> wrappers;  // each {"name": ..., its keyword arguments}, applied in order
  std::vector<std::string> pythonpath;   // folders put first on the workers' sys.path
  std::string python;                    // the interpreter ("" = python3 on PATH)
};

}  // namespace ppo
