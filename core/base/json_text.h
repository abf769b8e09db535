#pragma once
// JSON text as the logs and recordings write it: never throwing on the
// partial UTF-8 that byte-level token pieces produce.
#include <cstdint>
#include <string>
#include <nlohmann/json_fwd.hpp>

namespace h2o {

// j.dump() with invalid UTF-8 replaced instead of thrown on.
std::string json_dump(const nlohmann::json& j, int indent = -1);

// A text that may hold partial UTF-8: a string when valid, else an array of
// byte values, so that it reads back byte for byte.
nlohmann::json text_json(const std::string& text);
std::string text_from_json(const nlohmann::json& j);

// A whole number read from JSON a file gave (nlohmann's get<int>() of 1e110
// is undefined behaviour): `j` as an int when it is a whole number in int's
// range, else Error("<what>: expected a whole number, got ..."). The _or form
// reads `key` of the object `obj`, `fallback` when it is not there.
int json_int(const nlohmann::json& j, const std::string& what);
int json_int_or(const nlohmann::json& obj, const char* key, int fallback, const std::string& what);
// `j` as a 64-bit whole number, or false (and `out` unchanged) when it is not one.
bool json_whole(const nlohmann::json& j, int64_t& out);

// The JSON document [begin, end) of `file` (a model's header or config, a
// tokenizer.json). Throws Error("<file>: invalid JSON: <why>") on a syntax
// error, and on nesting deeper than kMaxJsonDepth, which no such file needs
// (so a hostile file costs no more than its size to refuse). A UTF-8
// byte-order mark before it is skipped.
constexpr int kMaxJsonDepth = 64;
nlohmann::json parse_json_document(const char* begin, const char* end, const std::string& file);

}  // namespace h2o
