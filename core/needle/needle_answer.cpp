#include "core/needle/needle_answer.h"

#include <memory>

#include "core/runtime/sampler.h"

namespace h2o {

std::vector<LayerState> read_layers(const SessionCache& cache) {
  std::vector<LayerState> states;
  for (int l = 0; l < cache.layers(); ++l) states.push_back(cache.read_layer(l));
  return states;
}

std::vector<Answered> answer_question(CacheFeed& feed, std::span<SessionCache* const> caches,
                                      std::span<const int> question, std::span<const int> answer,
                                      std::span<const NeedleSpan> needles, int greedy_tokens) {
  const int vocab = feed.backend().model().config.vocab_size;
  std::vector<Answered> out(caches.size());
  // The question: its last row predicts the answer's first token; the states after its cut.
  std::vector<FeedOutput> asked = feed.feed(caches, question, {.last_logits = true, .states = true});
  for (size_t i = 0; i < caches.size(); ++i)
    out[i].held_answer = held_needle(asked[i].states, int32_t(needles[i].begin), int32_t(needles[i].end));
  if (greedy_tokens > 0) {
    std::vector<std::unique_ptr<SessionCache>> forks;
    std::vector<SessionCache*> raw;
    std::vector<int> first;
    for (size_t i = 0; i < caches.size(); ++i) {
      forks.push_back(feed.backend().fork(*caches[i]));
      raw.push_back(forks.back().get());
      first.push_back(argmax(asked[i].logits));
    }
    std::vector<std::vector<int>> said = feed.greedy(raw, first, greedy_tokens);
    for (size_t i = 0; i < caches.size(); ++i) out[i].greedy = std::move(said[i]);
  }
  // The answer but its last token: row j predicts answer[j + 1].
  std::vector<FeedOutput> rows = feed.feed(caches, answer.first(answer.size() - 1), {.all_logits = true});
  for (size_t i = 0; i < caches.size(); ++i) {
    std::vector<float>& logits = asked[i].logits;
    logits.insert(logits.end(), rows[i].logits.begin(), rows[i].logits.end());
    out[i].recall = answer_recall(logits, answer, vocab);
  }
  return out;
}

}  // namespace h2o
