#include "core/text/special_tokens.h"

#include <algorithm>

namespace h2o::text {

void SpecialTokens::add(const std::string& text, int id) {
  if (text.empty() || !by_text_.emplace(text, id).second) return;
  auto& bucket = by_first_byte_[static_cast<uint8_t>(text[0])];
  const auto at = std::find_if(bucket.begin(), bucket.end(),
                               [&](const auto& entry) { return entry.first.size() < text.size(); });
  bucket.insert(at, {text, id});
}

int SpecialTokens::find(std::string_view text) const {
  const auto it = by_text_.find(std::string(text));
  return it == by_text_.end() ? -1 : it->second;
}

std::vector<SpecialTokens::Segment> SpecialTokens::split(std::string_view text) const {
  std::vector<Segment> out;
  size_t plain_from = 0;
  for (size_t at = 0; at < text.size();) {
    const auto& bucket = by_first_byte_[static_cast<uint8_t>(text[at])];
    const auto match = std::find_if(bucket.begin(), bucket.end(), [&](const auto& entry) {
      return text.compare(at, entry.first.size(), entry.first) == 0;
    });
    if (match == bucket.end()) {
      ++at;
      continue;
    }
    if (at > plain_from) out.push_back({text.substr(plain_from, at - plain_from), -1});
    out.push_back({text.substr(at, match->first.size()), match->second});
    at += match->first.size();
    plain_from = at;
  }
  if (plain_from < text.size()) out.push_back({text.substr(plain_from), -1});
  return out;
}

std::vector<Tokenizer::Segment> split_at(const SpecialTokens& specials, std::string_view text) {
  std::vector<Tokenizer::Segment> out;
  for (const auto& segment : specials.split(text)) out.push_back({std::string(segment.text), segment.id});
  return out;
}

}  // namespace h2o::text
