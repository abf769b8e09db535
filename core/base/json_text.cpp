#include "core/base/json_text.h"

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

}  // namespace h2o
