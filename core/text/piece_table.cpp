// The piece table (see piece_table.h).
#include "core/text/piece_table.h"

#include "core/base/error.h"

namespace h2o::text {

void PieceTable::reserve(size_t pieces, size_t bytes) {
  bytes_.reserve(bytes);
  offsets_.reserve(pieces + 1);
  ids_.reserve(pieces);
  size_t want = 16;
  while (3 * want < 4 * pieces) want *= 2;  // at most 3/4 full: probes stay short, Qwen2's table 2 MB
  if (want > slots_.size()) {
    slots_.assign(want, Slot{});
    for (size_t e = 0; e < ids_.size(); ++e) {  // re-index what is there already
      const uint32_t h = hash_of(text_of(int32_t(e)));
      slots_[probe(text_of(int32_t(e)), h)] = {h, int32_t(e)};
    }
  }
}

// FNV-1a: short keys (pieces average under 8 bytes), no allocation, and good
// enough spread for linear probing at half load.
uint32_t PieceTable::hash_of(std::string_view text) {
  uint32_t h = 2166136261u;
  for (const char c : text) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
  return h;
}

size_t PieceTable::probe(std::string_view text, uint32_t hash) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.entry < 0 || (s.hash == hash && text_of(s.entry) == text)) return i;
  }
}

void PieceTable::grow() { reserve(slots_.empty() ? 8 : slots_.size(), bytes_.size()); }

void PieceTable::add(std::string_view text, int id) {
  if (4 * (ids_.size() + 1) > 3 * slots_.size()) grow();
  if (bytes_.size() + text.size() > UINT32_MAX) fail("vocabulary", "its pieces exceed 4 GiB of text");
  const uint32_t h = hash_of(text);
  const size_t at = probe(text, h);
  if (slots_[at].entry >= 0) return;  // a duplicate: the first id stays
  bytes_.append(text);
  offsets_.push_back(static_cast<uint32_t>(bytes_.size()));
  ids_.push_back(id);
  slots_[at] = {h, int32_t(ids_.size() - 1)};
}

int PieceTable::find(std::string_view text) const {
  if (slots_.empty()) return -1;
  const Slot& s = slots_[probe(text, hash_of(text))];
  return s.entry < 0 ? -1 : ids_[size_t(s.entry)];
}

}  // namespace h2o::text
