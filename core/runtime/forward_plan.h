#pragma once
// What every backend does around its forward pass the same way, written once
// so that a backend keeps only storage and compute: the checks made before
// anything changes, the room each cache makes for its new rows (a cache that
// cannot grow fails its own session, not the step), and which rows get logits.
#include <span>
#include <string>
#include <vector>

#include "core/runtime/backend.h"
#include "core/runtime/kv_memory_account.h"

namespace h2o {

// What an item is checked against, and how errors name the backend.
struct ForwardLimits {
  std::string backend;  // "cpu backend", "cuda backend"
  int vocab = 0, layers = 0, heads = 0;
};

// Throws Error for an item with no tokens, a token outside the vocabulary,
// or a capture of a layer or query head the model does not have.
void check_item(const ForwardItem& item, const ForwardLimits& limits);

// Every item checked (check_item), and its cache as the backend's own type:
// Error for a cache another backend made.
template <class Cache>
std::vector<Cache*> checked_caches(std::span<ForwardItem> items, const ForwardLimits& limits) {
  std::vector<Cache*> caches(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    caches[i] = dynamic_cast<Cache*>(items[i].cache);
    if (!caches[i]) throw Error(limits.backend + ": a session cache from another backend was passed to forward()");
    check_item(items[i], limits);
  }
  return caches;
}

// Room in every item's cache for its new rows, before anything runs. A cache
// that cannot grow (CacheCannotGrow: past the KV limit, or out of memory)
// fails its own item: SessionFailure, so the engine stops that session alone.
template <class Cache>
void reserve_rows(std::span<ForwardItem> items, const std::vector<Cache*>& caches) {
  for (size_t i = 0; i < items.size(); ++i) {
    try {
      caches[i]->reserve_for(int(items[i].tokens.size()));
    } catch (const CacheCannotGrow& e) {
      throw SessionFailure(i, e.what());
    }
  }
}

// Which of an item's rows are classified (their logits computed): the last
// when the next token is chosen or last-row logits are asked for, every row
// with all-row logits, and the leading rows teacher forcing scores.
struct LogitNeeds {
  bool choose = false;      // the next token is chosen from the last row
  bool logits = false;      // full logits come back: the last row, or every row with all_logits
  bool all_logits = false;
  int forced_rows = 0;      // leading rows scored in teacher-forced mode
  bool classified(int rows, int r) const;
};
LogitNeeds logit_needs(const ForwardItem& item);

}  // namespace h2o
