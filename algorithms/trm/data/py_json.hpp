// JSON text exactly as Python's json.dump(obj, f) writes it with its defaults (", " and ": "
// separators, ensure_ascii, no indent, float repr), so that files the TRM reference writes
// with json.dump (dataset.json, identifiers.json, test_puzzles.json) can be reproduced byte for
// byte. Key order is the object's own (ordered_json keeps the input's order, as a Python dict).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace trm {

// Python's repr(float): the shortest digits that round-trip, fixed notation for exponents
// -4 <= e < 16 ("0.0001", "1e+16", "1e-05", "2.5", "3.0"); "Infinity"/"NaN" as json.dump.
std::string python_float_repr(double);
// json.dumps(value) for objects, arrays, strings, integers, floats, booleans and null.
std::string python_json_dumps(const nlohmann::ordered_json&);
void python_json_dumps(const nlohmann::ordered_json&, std::string& out);

}  // namespace trm
