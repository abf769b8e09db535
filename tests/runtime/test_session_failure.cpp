// A session whose KV cache cannot grow (out of memory, or past the backend's
// KV limit) stops with a message; the other sessions go on exactly as they
// would have without it, batched or not, streaming or teacher-forced.
#include <gtest/gtest.h>

#include <map>

#include "core/cpu/cpu_backend.h"
#include "core/runtime/engine.h"
#include "core/runtime/kv_memory_account.h"
#include "core/model/model.h"
#include "core/text/tokenizer.h"

using namespace h2o;

namespace {

std::shared_ptr<const Model> tiny_model() { return make_synthetic({"stories260K", 7, DType::F32, 0, 0}); }

std::vector<PolicyConfig> three_policies() {
  return {PolicyConfig{}, PolicyConfig::named("streaming").set("sinks", 4).set("window", 28),
          PolicyConfig::named("h2o").set("sinks", 4).set("heavy", 14).set("recent", 14)};
}

// Three turns of fixed ids, 40 new tokens each: the full cache passes 200 tokens.
std::vector<Turn> turns() {
  std::vector<Turn> out;
  for (int t = 0; t < 3; ++t) {
    Turn turn;
    turn.question_id = t + 1;
    for (int i = 0; i < 30; ++i) turn.ids.push_back((t * 131 + i * 17 + 1) % 512);
    out.push_back(turn);
  }
  return out;
}

struct StreamRun {
  std::map<int, std::vector<int>> tokens;  // per session, every generated token
  std::map<int, std::string> errors;       // per session, the step report's error
  std::map<int, int64_t> stop_step;
  std::map<int, int64_t> steps_after_stop;  // reports naming a session after its stop
  int64_t peak_kv = 0;
  std::vector<int64_t> allocated;  // per session at the end
};

StreamRun stream(bool batched, int64_t kv_limit) {
  auto model = tiny_model();
  EngineOptions o;
  o.policies = three_policies();
  o.max_new_tokens = 40;
  o.batched = batched;
  Engine engine(model, make_cpu_backend(model, 2, kv_limit), make_byte_tokenizer(512), o);
  engine.start_stream(turns());
  StreamRun run;
  while (!engine.done()) {
    const StepRecord r = engine.step();
    for (const SessionRecord& s : r.sessions) {
      if (run.errors.count(s.session)) ++run.steps_after_stop[s.session];
      if (!s.stopped.empty()) {
        run.errors[s.session] = s.stopped;
        run.stop_step[s.session] = r.step;
      }
      if (s.token >= 0) run.tokens[s.session].push_back(s.token);
    }
  }
  run.peak_kv = engine.backend().peak_kv_bytes();
  for (const auto& s : engine.sessions()) run.allocated.push_back(s->cache().allocated_bytes());
  return run;
}

class KvLimit : public ::testing::TestWithParam<bool> {};

TEST_P(KvLimit, FullCacheStopsAndTheOthersGoOnUnchanged) {
  const bool batched = GetParam();
  const StreamRun free_run = stream(batched, 0);
  ASSERT_TRUE(free_run.errors.empty());
  // Peak KV of all three together is what the caches hold at the end; a limit
  // halfway into the full cache's share stops it mid-run, and only it.
  const int64_t bounded = free_run.allocated[1] + free_run.allocated[2];
  EXPECT_EQ(free_run.peak_kv, free_run.allocated[0] + bounded);
  const int64_t limit = bounded + free_run.allocated[0] / 2;
  const StreamRun limited = stream(batched, limit);

  ASSERT_EQ(limited.errors.size(), 1u);
  ASSERT_TRUE(limited.errors.count(0));
  EXPECT_NE(limited.errors.at(0).find("out of KV memory"), std::string::npos) << limited.errors.at(0);
  EXPECT_GT(limited.stop_step.at(0), 0);
  EXPECT_FALSE(limited.steps_after_stop.count(0)) << "a stopped session took part in a later step";
  EXPECT_LE(limited.peak_kv, limit);
  // The full cache answered part of the stream; the bounded ones all of it, token for token.
  EXPECT_LT(limited.tokens.at(0).size(), free_run.tokens.at(0).size());
  EXPECT_EQ(std::vector<int>(free_run.tokens.at(0).begin(), free_run.tokens.at(0).begin() + long(limited.tokens.at(0).size())),
            limited.tokens.at(0));
  EXPECT_EQ(limited.tokens.at(1), free_run.tokens.at(1));
  EXPECT_EQ(limited.tokens.at(2), free_run.tokens.at(2));
}

INSTANTIATE_TEST_SUITE_P(BatchedOrNot, KvLimit, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Batched" : "OneByOne"; });

TEST(KvLimitEngine, EverySessionStoppedEndsTheRun) {
  auto model = tiny_model();
  EngineOptions o;
  o.policies = three_policies();
  Engine engine(model, make_cpu_backend(model, 1, 1024), make_byte_tokenizer(512), o);
  engine.start_stream(turns());
  const StepRecord r = engine.step();
  EXPECT_EQ(r.sessions.size(), 3u);
  for (const SessionRecord& s : r.sessions) EXPECT_FALSE(s.stopped.empty());
  EXPECT_TRUE(engine.done());
  for (const auto& s : engine.sessions()) EXPECT_FALSE(s->stopped().empty());
  EXPECT_EQ(engine.backend().peak_kv_bytes(), 0);
}

TEST(KvLimitEngine, TeacherForcedGoesOnWithoutTheReference) {
  auto model = tiny_model();
  std::vector<int> text;
  for (int i = 0; i < 160; ++i) text.push_back((i * 37 + 1) % 512);
  auto forced = [&](int64_t limit) {
    EngineOptions o;
    o.policies = three_policies();
    Engine engine(model, make_cpu_backend(model, 1, limit), make_byte_tokenizer(512), o);
    engine.start_forced(text);
    std::map<int, std::vector<double>> nll;
    std::map<int, size_t> kl_rows;
    while (!engine.done())
      for (const SessionRecord& s : engine.step().sessions) {
        nll[s.session].insert(nll[s.session].end(), s.nll.begin(), s.nll.end());
        kl_rows[s.session] += s.kl.size();
      }
    return std::make_tuple(nll, kl_rows, engine.sessions()[0]->stopped());
  };
  const auto [free_nll, free_kl, free_stop] = forced(0);
  EXPECT_TRUE(free_stop.empty());
  // Bounded caches reserve (budget + slack + 1) rows per head once: 33 rows of
  // 8 floats, K and V, in 5 layers x 4 KV heads, each. The full cache gets 64
  // rows and one growth to 96, not the next.
  const int64_t row = 8 * 4 * 2 * 5 * 4;
  const auto [nll, kl, stop] = forced(2 * 33 * row + 96 * row);
  EXPECT_NE(stop.find("out of KV memory"), std::string::npos) << stop;
  EXPECT_LT(nll.at(0).size(), free_nll.at(0).size());
  for (int s : {1, 2}) {
    ASSERT_EQ(nll.at(s).size(), free_nll.at(s).size());
    for (size_t i = 0; i < nll.at(s).size(); ++i) ASSERT_DOUBLE_EQ(nll.at(s)[i], free_nll.at(s)[i]) << s << " " << i;
    // KL and agreement need the full cache: scored only while it ran.
    EXPECT_EQ(kl.at(s), nll.at(0).size());
    EXPECT_EQ(free_kl.at(s), free_nll.at(s).size());
  }
}

// Caches give their bytes back: a backend's account is what its live caches hold.
TEST(KvMemoryAccountTest, CachesReleaseWhatTheyBooked) {
  auto model = tiny_model();
  // A full cache grows 64, 96, 144, 216 rows of 1280 bytes (5 layers x 4 KV
  // heads x 8 floats x K and V): 256 KiB holds 144 rows, not 216.
  constexpr int64_t kLimit = 256 * 1024;
  auto backend = make_cpu_backend(model, 1, kLimit);
  int token = 1;
  for (int round = 0; round < 3; ++round) {
    // Every round gets as far as the first: the last round's cache gave its memory back.
    auto cache = backend->new_cache(PolicyConfig{});
    int fed = 0;
    try {
      for (; fed < 1000; ++fed) {
        ForwardItem item;
        item.cache = cache.get();
        item.tokens = std::span<const int>(&token, 1);
        backend->forward(std::span<ForwardItem>(&item, 1));
      }
    } catch (const SessionFailure& f) {
      EXPECT_EQ(f.item(), 0u);
      EXPECT_NE(std::string(f.what()).find("out of KV memory"), std::string::npos) << f.what();
    }
    EXPECT_EQ(fed, 144) << "round " << round;
    EXPECT_EQ(cache->allocated_bytes(), 144 * 1280);
  }
  EXPECT_EQ(backend->peak_kv_bytes(), 144 * 1280);
}

}  // namespace

// Budgets are bounded by the machine's memory before anything runs: bounded
// caches filled to budget + slack must fit in it together.
TEST(KvBudgets, BudgetsBeyondTheMachinesMemoryAreRefused) {
  ModelConfig c;  // Llama-2-7B's attention: 32 layers x 32 KV heads of 128
  c.dim = 4096, c.hidden_dim = 11008, c.n_layers = 32, c.n_heads = 32, c.n_kv_heads = 32, c.vocab_size = 32000;
  EXPECT_EQ(kv_cache_bytes(c, 1, false), 32 * 32 * (128 * 4 * 2 + 8));
  EXPECT_EQ(kv_cache_bytes(c, 1, true), 32 * 32 * (128 * 4 * 3 + 8));
  PolicySettings s;
  s.budget = kMaxCacheTokens;  // 17.7 TB of KV in this model: more than any machine
  const std::vector<PolicyConfig> huge = {PolicyConfig{}, make_policy("h2o", s)};
  try {
    check_budgets_fit_memory(c, huge);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    const std::string text = e.what();
    EXPECT_EQ(text.rfind("--budget: caches of up to 16777216 tokens per KV head (1 cache, 32 layers x 32 KV heads) need ", 0), 0u) << text;
    EXPECT_NE(text.find(", more than this machine's "), std::string::npos) << text;
  }
  s.budget = 256;
  EXPECT_NO_THROW(check_budgets_fit_memory(c, {PolicyConfig{}, make_policy("h2o", s), make_policy("tova", s)}));
  EXPECT_NO_THROW(check_budgets_fit_memory(c, {PolicyConfig{}}));  // the full cache grows until memory stops it
}
