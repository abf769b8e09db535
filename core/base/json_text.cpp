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

nlohmann::json parse_json_document(const char* begin, const char* end, const std::string& file) {
  using nlohmann::json;
  struct TooDeep {};
  const auto depth_limit = [](int depth, json::parse_event_t, json&) {
    if (depth > kMaxJsonDepth) throw TooDeep{};
    return true;
  };
  try {
    return json::parse(begin, end, depth_limit);
  } catch (const TooDeep&) {
    fail(file, "invalid JSON: nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  } catch (const json::exception& e) {
    std::string why = e.what();
    for (char& c : why)
      if (c == '\n' || c == '\r') c = ' ';
    if (why.size() > 200) why = why.substr(0, 200) + "...";
    fail(file, "invalid JSON: " + why);
  }
}

}  // namespace h2o
