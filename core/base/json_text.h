#pragma once
// JSON text as the logs and recordings write it: never throwing on the
// partial UTF-8 that byte-level token pieces produce.
#include <string>
#include <nlohmann/json.hpp>

namespace h2o {

// j.dump() with invalid UTF-8 replaced instead of thrown on.
std::string json_dump(const nlohmann::json& j, int indent = -1);

// A text that may hold partial UTF-8: a string when valid, else an array of
// byte values, so that it reads back byte for byte.
nlohmann::json text_json(const std::string& text);
std::string text_from_json(const nlohmann::json& j);

}  // namespace h2o
