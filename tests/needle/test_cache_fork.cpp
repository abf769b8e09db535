// Backend::fork: a copy of a session's cache that runs on as a session of its
// own, bit for bit as the original would, on the CPU and through the CUDA
// backend's code (cuda-sim), at every KV precision and position mode.
#include <gtest/gtest.h>

#include <memory>

#include "core/backends/make_backend.h"
#include "core/model/model.h"
#include "core/runtime/kv_memory_account.h"

using namespace h2o;

namespace {

struct Fed {
  std::vector<float> logits;  // every row of every step, in order
  std::vector<LayerState> states;
};

// Feeds `tokens` to `cache`, `chunk` at a time, keeping every row's logits and the last step's layer states.
Fed feed(Backend& backend, SessionCache& cache, const std::vector<int>& tokens, int chunk) {
  Fed out;
  CapturePlan plan;
  for (int l = 0; l < backend.model().config.n_layers; ++l) plan.layer_states.push_back(l);
  for (size_t first = 0; first < tokens.size(); first += size_t(chunk)) {
    const size_t n = std::min(size_t(chunk), tokens.size() - first);
    std::vector<float> logits;
    ForwardItem item;
    item.cache = &cache;
    item.tokens = std::span<const int>(tokens).subspan(first, n);
    item.logits = &logits;
    item.all_logits = true;
    item.capture = &plan;
    out.states.clear();
    item.layer_states = &out.states;
    backend.forward(std::span<ForwardItem>(&item, 1));
    out.logits.insert(out.logits.end(), logits.begin(), logits.end());
  }
  return out;
}

std::vector<int> tokens_from(int seed, int n, int vocab) {
  std::vector<int> out;
  for (int i = 0; i < n; ++i) out.push_back((seed + i * 37 + i * i * 11) % vocab);
  return out;
}

void expect_same(const Fed& a, const Fed& b, const std::string& what) {
  ASSERT_EQ(a.logits.size(), b.logits.size()) << what;
  EXPECT_EQ(a.logits, b.logits) << what << ": the logits differ";  // bit for bit
  ASSERT_EQ(a.states.size(), b.states.size()) << what;
  for (size_t l = 0; l < a.states.size(); ++l) {
    EXPECT_EQ(a.states[l].positions, b.states[l].positions) << what << " layer " << l;
    EXPECT_EQ(a.states[l].scores, b.states[l].scores) << what << " layer " << l;
  }
}

std::vector<PolicyConfig> fork_policies(int head_dim) {
  const auto make = [&](const char* kind, int budget, int bits, bool rolling) {
    PolicySettings s;
    s.budget = budget;
    s.rolling = rolling;
    if (bits) s.kv.key_bits = s.kv.value_bits = bits;
    PolicyConfig p = make_policy(kind, s);
    p.shape_kv(head_dim);
    return p;
  };
  return {PolicyConfig{}, make("streaming", 16, 0, true), make("h2o", 16, 0, false), make("tova", 16, 0, false),
          make("h2o", 24, 4, false), make("streaming", 24, 2, false)};
}

// Three caches fed the same prefix; a fork of the first. The fork and the
// second are then fed one continuation, the first and the third another:
// the fork runs as the second does, and the first as though it had never been forked.
void check_forks(const std::string& backend_kind, int prefix, int more, int chunk) {
  auto model = make_synthetic({"stories260K", 7, DType::F32, 0, 0});
  auto backend = make_backend(model, {backend_kind, backend_kind == "cpu" ? 2 : 1, "", 0});
  const int vocab = model->config.vocab_size;
  const std::vector<int> start = tokens_from(1, prefix, vocab), x = tokens_from(5, more, vocab),
                         y = tokens_from(9, more, vocab);
  for (const PolicyConfig& policy : fork_policies(model->config.head_dim())) {
    const std::string what = backend_kind + " " + policy.describe();
    auto original = backend->new_cache(policy), twin_x = backend->new_cache(policy), twin_y = backend->new_cache(policy);
    for (SessionCache* c : {original.get(), twin_x.get(), twin_y.get()}) feed(*backend, *c, start, chunk);
    std::unique_ptr<SessionCache> fork = backend->fork(*original);
    EXPECT_EQ(fork->tokens_seen(), original->tokens_seen()) << what;
    EXPECT_EQ(fork->allocated_bytes(), original->allocated_bytes()) << what;
    EXPECT_EQ(fork->live_bytes(), original->live_bytes()) << what;
    EXPECT_EQ(fork->quantized_tokens(), original->quantized_tokens()) << what;
    expect_same(feed(*backend, *fork, x, chunk), feed(*backend, *twin_x, x, chunk), what + ", the fork");
    expect_same(feed(*backend, *original, y, chunk), feed(*backend, *twin_y, y, chunk), what + ", the original");
  }
}

}  // namespace

TEST(CacheFork, OnTheCpuRunsOnBitForBitAndLeavesTheOriginalAlone) { check_forks("cpu", 40, 30, 3); }

TEST(CacheFork, ThroughTheCudaBackendsCodeRunsOnBitForBit) { check_forks("cuda-sim", 14, 6, 4); }

TEST(CacheFork, PastTheKvLimitIsRefusedAndBooksNothing) {
  auto model = make_synthetic({"stories260K", 7, DType::F32, 0, 0});
  for (const std::string kind : {"cpu", "cuda-sim"}) {
    auto backend = make_backend(model, {kind, 1, "", 0});
    auto cache = backend->new_cache(PolicyConfig{});
    feed(*backend, *cache, tokens_from(1, 8, 512), 8);
    // A limit that holds this cache but not two.
    auto limited = make_backend(model, {kind, 1, "", cache->allocated_bytes() * 3 / 2});
    auto held = limited->new_cache(PolicyConfig{});
    feed(*limited, *held, tokens_from(1, 8, 512), 8);
    const int64_t peak = limited->peak_kv_bytes();
    EXPECT_THROW(limited->fork(*held), CacheCannotGrow) << kind;
    EXPECT_EQ(limited->peak_kv_bytes(), peak) << kind;
    EXPECT_THROW(limited->fork(*cache), Error) << kind << ": a cache of another backend";
  }
}
