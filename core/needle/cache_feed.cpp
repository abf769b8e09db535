#include "core/needle/cache_feed.h"

#include <algorithm>

#include "core/base/error.h"

namespace h2o {

CacheFeed::CacheFeed(Backend& backend, int chunk, bool batched) : backend_(backend), chunk_(chunk), batched_(batched) {
  if (chunk < 1) fail("--prefill-chunk", "must be >= 1, got " + std::to_string(chunk));
}

void CacheFeed::run(std::span<ForwardItem> items) {
  const auto named = [](const ForwardItem& item, const char* what) {
    return item.cache->policy().describe() + ": " + what;
  };
  try {
    if (batched_) {
      backend_.forward(items);
    } else {
      for (ForwardItem& item : items) backend_.forward(std::span<ForwardItem>(&item, 1));
    }
  } catch (const SessionFailure& e) {
    const ForwardItem& item = batched_ ? items[e.item()] : items[0];
    throw Error(named(item, e.what()));
  }
  for (const ForwardItem& item : items) fed_ += int64_t(item.tokens.size());
}

std::vector<FeedOutput> CacheFeed::feed(std::span<SessionCache* const> caches, std::span<const int> tokens,
                                        const FeedReadout& readout) {
  std::vector<FeedOutput> out(caches.size());
  if (tokens.empty()) return out;
  const int layers = backend_.model().config.n_layers;
  CapturePlan states;
  for (int l = 0; l < layers; ++l) states.layer_states.push_back(l);
  std::vector<std::vector<float>> logits(caches.size());
  for (size_t first = 0; first < tokens.size(); first += size_t(chunk_)) {
    const std::span<const int> part = tokens.subspan(first, std::min(size_t(chunk_), tokens.size() - first));
    const bool last = first + part.size() == tokens.size();
    std::vector<ForwardItem> items(caches.size());
    for (size_t i = 0; i < caches.size(); ++i) {
      ForwardItem& item = items[i];
      item.cache = caches[i];
      item.tokens = part;
      if (readout.all_logits || (readout.last_logits && last)) {
        item.logits = &logits[i];
        item.all_logits = readout.all_logits;
      }
      if (readout.states && last) {
        item.capture = &states;
        item.layer_states = &out[i].states;
      }
    }
    run(items);
    if (readout.all_logits || (readout.last_logits && last))
      for (size_t i = 0; i < caches.size(); ++i)
        out[i].logits.insert(out[i].logits.end(), logits[i].begin(), logits[i].end());
  }
  return out;
}

std::vector<std::vector<int>> CacheFeed::greedy(std::span<SessionCache* const> caches, std::span<const int> first,
                                                int count) {
  std::vector<std::vector<int>> out(caches.size());
  if (count <= 0) return out;
  for (size_t i = 0; i < caches.size(); ++i) out[i].push_back(first[i]);
  const TokenChoice choice{};  // greedy
  std::vector<int> chosen(caches.size(), -1);
  for (int t = 1; t < count; ++t) {
    std::vector<ForwardItem> items(caches.size());
    for (size_t i = 0; i < caches.size(); ++i) {
      items[i].cache = caches[i];
      items[i].tokens = std::span<const int>(&out[i].back(), 1);
      items[i].choose = &choice;
      items[i].chosen = &chosen[i];
    }
    run(items);
    for (size_t i = 0; i < caches.size(); ++i) out[i].push_back(chosen[i]);
  }
  return out;
}

}  // namespace h2o
