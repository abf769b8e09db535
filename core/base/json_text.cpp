#include "core/base/json_text.h"

#include <climits>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "core/base/utf8.h"

namespace h2o {

std::string json_dump(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

nlohmann::json text_json(const std::string& text) {
  if (valid_utf8(text)) return text;
  nlohmann::json bytes = nlohmann::json::array();
  for (char c : text) bytes.push_back(int(static_cast<unsigned char>(c)));
  return bytes;
}

std::string text_from_json(const nlohmann::json& j) {
  if (j.is_string()) return j.get<std::string>();
  std::string out;
  for (const auto& b : j) out += char(b.get<int>());
  return out;
}

bool json_whole(const nlohmann::json& j, int64_t& out) {
  // (is_number_integer() is true of unsigned numbers too: those above INT64_MAX are not whole here.)
  if (j.is_number_unsigned()) {
    if (j.get<uint64_t>() > uint64_t(INT64_MAX)) return false;
    out = int64_t(j.get<uint64_t>());
    return true;
  }
  if (!j.is_number_integer()) return false;
  out = j.get<int64_t>();
  return true;
}

int json_int(const nlohmann::json& j, const std::string& what) {
  int64_t v = 0;
  if (!json_whole(j, v) || v < INT32_MIN || v > INT32_MAX)
    throw Error(what + ": expected a whole number, got " + json_dump(j).substr(0, 40));
  return int(v);
}

int json_int_or(const nlohmann::json& obj, const char* key, int fallback, const std::string& what) {
  return obj.is_object() && obj.contains(key) ? json_int(obj[key], what) : fallback;
}

namespace {

// Whether [begin, end) nests arrays and objects deeper than `limit`, in one
// pass (brackets inside strings do not count). nlohmann's own depth callback
// is not used: with a callback its parser rescans an object's members each
// time one of them ends, so a header of 200,000 tensor entries took minutes.
bool nests_deeper_than(const char* begin, const char* end, int limit) {
  int depth = 0;
  bool in_string = false;
  for (const char* p = begin; p < end; ++p) {
    const char c = *p;
    if (in_string) {
      if (c == '\\') ++p;  // the escaped character, whatever it is
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > limit) return true;
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
  return false;
}

}  // namespace

nlohmann::json parse_json_document(const char* begin, const char* end, const std::string& file) {
  if (nests_deeper_than(begin, end, kMaxJsonDepth))
    fail(file, "invalid JSON: nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  try {
    return nlohmann::json::parse(begin, end);
  } catch (const nlohmann::json::exception& e) {
    std::string why = e.what();
    for (char& c : why)
      if (c == '\n' || c == '\r') c = ' ';
    if (why.size() > 200) why = why.substr(0, 200) + "...";
    fail(file, "invalid JSON: " + why);
  }
}

}  // namespace h2o
