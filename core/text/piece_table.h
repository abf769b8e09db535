#pragma once
// A map from piece text to id for vocabularies of 10^5 pieces, built once.
//
// std::unordered_map<std::string, int> costs a node and usually a string
// allocation per piece, and a cache miss or two per probe; loading Llama-3's
// 128k pieces and 280k merges spent most of its time there. Here every text
// lives in one buffer and the index is an open-addressing array of
// (hash, entry) slots, so building allocates a handful of times and a probe
// compares stored hashes before it touches any text.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace h2o::text {

class PieceTable {
 public:
  // Room for `pieces` texts of `bytes` bytes in all, so adding never reallocates.
  void reserve(size_t pieces, size_t bytes);
  // Adds `text` as `id`. A text added twice keeps its first id.
  void add(std::string_view text, int id);
  // The id of `text`, or -1.
  int find(std::string_view text) const;
  size_t size() const { return ids_.size(); }

 private:
  struct Slot {
    uint32_t hash = 0;
    int32_t entry = -1;  // index into offsets_ / ids_; -1: empty
  };
  static uint32_t hash_of(std::string_view text);
  std::string_view text_of(int32_t entry) const {
    return std::string_view(bytes_).substr(offsets_[size_t(entry)], offsets_[size_t(entry) + 1] - offsets_[size_t(entry)]);
  }
  void grow();
  // The slot holding `text`, or the empty slot where it would go.
  size_t probe(std::string_view text, uint32_t hash) const;

  std::string bytes_;
  std::vector<uint32_t> offsets_{0};  // entry i is bytes_[offsets_[i], offsets_[i + 1])
  std::vector<int> ids_;
  std::vector<Slot> slots_;  // a power of two, at most 3/4 full
};

}  // namespace h2o::text
