#include "core/needle/needle_grid.h"

#include <algorithm>
#include <map>
#include <memory>

#include "core/needle/needle_answer.h"

namespace h2o {
namespace {

using Caches = std::vector<std::unique_ptr<SessionCache>>;

std::vector<SessionCache*> raw(const Caches& caches) {
  std::vector<SessionCache*> out;
  for (const auto& c : caches) out.push_back(c.get());
  return out;
}

Caches fresh_caches(Backend& backend, const std::vector<PolicyConfig>& policies) {
  Caches out;
  for (const PolicyConfig& p : policies) out.push_back(backend.new_cache(p));
  return out;
}

Caches forks_of(Backend& backend, const Caches& caches) {
  Caches out;
  for (const auto& c : caches) out.push_back(backend.fork(*c));
  return out;
}

// One stream of the grid: a cell (length, depth), or a length's stream without the needle.
struct Job {
  NeedleStream stream;
  int64_t length = 0;
  int depth = -1;           // -1: without the needle
  int64_t fork_at = 0;      // the trunk's tokens it shares: a chunk boundary at or before its first own token
};

// What one stream's run gives per policy.
struct JobResult {
  std::vector<std::vector<int>> held_question, held_answer;
  std::vector<Recall> recall;
};

// Runs a job on caches that hold its stream's first `from` tokens.
JobResult run_job(CacheFeed& feed, const Caches& caches, const Job& job, int64_t from) {
  const NeedleStream& s = job.stream;
  const std::vector<SessionCache*> live = raw(caches);
  const std::span<const int> tokens(s.tokens);
  const bool needle = job.depth >= 0;
  JobResult r;
  const std::vector<FeedOutput> context =
      feed.feed(live, tokens.subspan(size_t(from), size_t(s.context - from)), {.states = needle});
  const std::span<const int> question = tokens.subspan(size_t(s.context), size_t(s.question_end - s.context));
  const std::vector<NeedleSpan> needles(caches.size(), NeedleSpan{s.needle_begin, s.needle_end});
  const std::vector<Answered> answered = answer_question(feed, live, question, s.answer(), needles);
  for (size_t i = 0; i < caches.size(); ++i) {
    if (needle) r.held_question.push_back(held_needle(context[i].states, s.needle_begin, s.needle_end));
    r.held_answer.push_back(answered[i].held_answer);
    r.recall.push_back(answered[i].recall);
  }
  return r;
}

// Every job of the spec, in the order the trunk reaches them.
std::vector<Job> grid_jobs(const NeedleGridSpec& spec) {
  const int64_t c = spec.chunk;
  std::vector<Job> jobs;
  for (int64_t length : spec.lengths) {
    Job without{stream_without_needle(spec.input, length), length, -1, 0};
    without.fork_at = spec.share_prefix ? without.stream.context / c * c : 0;
    jobs.push_back(std::move(without));
    for (int depth : spec.depths) {
      Job cell{needle_stream(spec.input, length, depth), length, depth, 0};
      cell.fork_at = spec.share_prefix ? cell.stream.needle_begin / c * c : 0;
      jobs.push_back(std::move(cell));
    }
  }
  std::stable_sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) { return a.fork_at < b.fork_at; });
  return jobs;
}

}  // namespace

NeedleGrid run_needle_grid(Backend& backend, const NeedleGridSpec& spec, const NeedleHooks& hooks) {
  check_needle_case(spec.input, spec.lengths, spec.depths);
  CacheFeed feed(backend, spec.chunk, spec.batched);
  const std::vector<Job> jobs = grid_jobs(spec);
  // The trunk: BOS and the haystack, as far as the last job shares it.
  std::vector<int> trunk_tokens{spec.input.bos};
  trunk_tokens.insert(trunk_tokens.end(), spec.input.haystack.begin(), spec.input.haystack.end());
  Caches trunk = fresh_caches(backend, spec.policies);
  int64_t trunk_at = 0;

  std::map<std::pair<int64_t, int>, JobResult> results;  // by (length, depth); depth -1 without the needle
  int done = 0;
  for (const Job& job : jobs) {
    if (hooks.stop && hooks.stop()) break;
    Caches caches;
    if (spec.share_prefix) {
      feed.feed(raw(trunk), std::span<const int>(trunk_tokens).subspan(size_t(trunk_at), size_t(job.fork_at - trunk_at)));
      trunk_at = job.fork_at;
      caches = forks_of(backend, trunk);
    } else {
      caches = fresh_caches(backend, spec.policies);
    }
    results[{job.length, job.depth}] = run_job(feed, caches, job, job.fork_at);
    if (hooks.progress) hooks.progress(++done, int(jobs.size()));
  }

  NeedleGrid grid;
  grid.tokens_fed = feed.tokens_fed();
  for (int64_t length : spec.lengths)
    for (int depth : spec.depths) {
      const auto cell = results.find({length, depth});
      const auto without = results.find({length, -1});
      if (cell == results.end() || without == results.end()) continue;  // stopped before it
      const NeedleStream s = needle_stream(spec.input, length, depth);
      for (size_t p = 0; p < spec.policies.size(); ++p)
        grid.outcomes.push_back({length, depth, p, s.needle_begin, s.needle_end, cell->second.held_question[p],
                                 cell->second.held_answer[p], cell->second.recall[p], without->second.recall[p]});
    }
  return grid;
}

}  // namespace h2o
