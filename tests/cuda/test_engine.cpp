// The CUDA backend under the engine, as the CLI and the app drive it: the
// shared greedy references reproduced, sampling and teacher forcing equal to
// the CPU backend's, sessions that run out of KV memory stopping alone, and
// decode steps replayed from CUDA graphs giving what eager steps give.
#include <gtest/gtest.h>

#include <fstream>
#include <cmath>
#include <map>
#include <numeric>
#include <nlohmann/json.hpp>

#include "core/cpu/cpu_backend.h"
#include "core/runtime/engine.h"
#include "core/text/tokenizer.h"
#include "tests/assets.h"
#include "tests/cuda/cuda_test_support.h"
#ifdef H2O_SIMT
#include "kernels/simt/device_emu.h"
#endif

using namespace h2o;

namespace {

std::shared_ptr<const Model> tiny_model() { return make_synthetic({"stories260K", 7, DType::F32, 0, 0}); }

std::unique_ptr<Backend> cuda(std::shared_ptr<const Model> model, int64_t kv_limit = 0,
                              CudaTuning tuning = test::cpu_projection_tuning()) {
  return test::cuda_backend(std::move(model), tuning, "", kv_limit);  // "": the file's own precision
}

std::vector<PolicyConfig> three_policies() {
  return {PolicyConfig{}, PolicyConfig::named("streaming").set("sinks", 4).set("window", 28),
          PolicyConfig::named("h2o").set("sinks", 4).set("heavy", 14).set("recent", 14)};
}

std::vector<Turn> turns(int count = 3) {
  std::vector<Turn> out;
  for (int t = 0; t < count; ++t) {
    Turn turn;
    turn.question_id = t + 1;
    for (int i = 0; i < 30; ++i) turn.ids.push_back((t * 131 + i * 17 + 1) % 512);
    out.push_back(turn);
  }
  return out;
}

struct StreamRun {
  std::map<int, std::vector<int>> tokens;
  std::map<int, std::string> errors;
  std::map<int, int64_t> steps_after_stop;
  int64_t peak_kv = 0;
  std::vector<int64_t> allocated;
};

StreamRun stream(std::unique_ptr<Backend> backend, std::shared_ptr<const Model> model, bool batched,
                 SamplingConfig sampling = {}, std::vector<PolicyConfig> policies = three_policies()) {
  EngineOptions o;
  o.policies = std::move(policies);
  o.max_new_tokens = 40;
  o.batched = batched;
  o.sampling = sampling;
  Engine engine(model, std::move(backend), make_byte_tokenizer(512), o);
  engine.start_stream(turns());
  StreamRun run;
  while (!engine.done()) {
    const StepRecord r = engine.step();
    for (const SessionRecord& s : r.sessions) {
      if (run.errors.count(s.session)) ++run.steps_after_stop[s.session];
      if (!s.stopped.empty()) run.errors[s.session] = s.stopped;
      if (s.token >= 0) run.tokens[s.session].push_back(s.token);
    }
  }
  run.peak_kv = engine.backend().peak_kv_bytes();
  for (const auto& s : engine.sessions()) run.allocated.push_back(s->cache().allocated_bytes());
  return run;
}

void check_reference(const std::string& reference, const std::string& model_file, const std::string& tokenizer) {
  std::ifstream f(test::asset("reference/" + reference));
  const auto ref = nlohmann::json::parse(f);
  auto model = load_model(test::asset(model_file));
  std::shared_ptr<const Tokenizer> tok = tokenizer_for(*model, tokenizer.empty() ? "" : test::asset(tokenizer));
  for (const auto& c : ref["cases"]) {
    // As `h2o-cli generate --prompt-ids ... --prefill-chunk 1` runs it (tests/app/test_reference_greedy.cpp).
    PolicySettings settings;
    const std::string policy = c["policy"];
    for (const char* p : {"sinks", "window", "heavy", "recent"})
      if (c.contains(p)) settings.given[p] = int(c[p]);
    settings.rolling = c.value("rolling", false);
    EngineOptions o;
    o.policies = {make_policy(policy, settings)};
    o.max_new_tokens = c.contains("steps") ? int(c["steps"]) : int(c["max_new_tokens"]);
    o.prefill_chunk = 1;
    Engine engine(model, cuda(model), tok, o);
    Turn turn;
    turn.ids = ref["prompt_ids"].get<std::vector<int>>();
    engine.start_stream({turn});
    std::vector<int> got;
    while (!engine.done())
      for (const SessionRecord& s : engine.step().sessions)
        if (s.token >= 0) got.push_back(s.token);
    const std::vector<int> expected = c["ids"];
    ASSERT_EQ(got.size(), expected.size()) << reference << " " << policy;
    for (size_t i = 0; i < expected.size(); ++i)
      ASSERT_EQ(got[i], expected[i]) << reference << " " << o.policies[0].describe() << ": first difference at generated token " << i;
  }
}

}  // namespace

// The shared references (an independent float64 implementation), reproduced
// token for token in f32. The f32 path is deterministic (fixed reduction
// orders, no atomics in any sum) and within ~1e-6 of the CPU backend's logits,
// which reproduces them; a logit margin below that would need the same
// summation order as the float64 reference, and none of these cases has one.
H2O_CUDA_TEST(Reference, Stories260KGreedy) {
  H2O_REQUIRE_CUDA();
  H2O_REQUIRE_ASSET("stories260K.bin");
  H2O_REQUIRE_ASSET("reference/stories260K-greedy.json");
  check_reference("stories260K-greedy.json", "stories260K.bin", "");
}

H2O_CUDA_TEST(Reference, Stories260KTova) {
  H2O_REQUIRE_CUDA();
  H2O_REQUIRE_ASSET("stories260K.bin");
  H2O_REQUIRE_ASSET("reference/stories260K-tova-greedy.json");
  check_reference("stories260K-tova-greedy.json", "stories260K.bin", "");
}

H2O_CUDA_TEST(Reference, Kjv1MRollingPastTheContext) {
  H2O_REQUIRE_CUDA();
  H2O_REQUIRE_ASSET("kjv-1M.bin");
  H2O_REQUIRE_ASSET("kjv-tok2k.model");
  H2O_REQUIRE_ASSET("reference/kjv-1M-greedy.json");
  check_reference("kjv-1M-greedy.json", "kjv-1M.bin", "kjv-tok2k.model");
}

class H2O_CUDA_SUITE(KvLimit) : public ::testing::TestWithParam<bool> {};

// As tests/runtime/test_session_failure.cpp holds the CPU backend to it: the
// full cache stops at the limit, alone; the others answer token for token as
// without it; nothing of a stopped session's step ran.
H2O_CUDA_TEST_P(KvLimit, FullCacheStopsAndTheOthersGoOnUnchanged) {
  H2O_REQUIRE_CUDA();
  const bool batched = GetParam();
  auto model = tiny_model();
  const StreamRun free_run = stream(cuda(model), model, batched);
  ASSERT_TRUE(free_run.errors.empty());
  const int64_t bounded = free_run.allocated[1] + free_run.allocated[2];
  EXPECT_EQ(free_run.peak_kv, free_run.allocated[0] + bounded);
  const int64_t limit = bounded + free_run.allocated[0] / 2;
  const StreamRun limited = stream(cuda(model, limit), model, batched);
  ASSERT_EQ(limited.errors.size(), 1u);
  ASSERT_TRUE(limited.errors.count(0));
  EXPECT_NE(limited.errors.at(0).find("out of KV memory"), std::string::npos) << limited.errors.at(0);
  EXPECT_FALSE(limited.steps_after_stop.count(0));
  EXPECT_LE(limited.peak_kv, limit);
  EXPECT_LT(limited.tokens.at(0).size(), free_run.tokens.at(0).size());
  EXPECT_EQ(std::vector<int>(free_run.tokens.at(0).begin(), free_run.tokens.at(0).begin() + long(limited.tokens.at(0).size())),
            limited.tokens.at(0));
  EXPECT_EQ(limited.tokens.at(1), free_run.tokens.at(1));
  EXPECT_EQ(limited.tokens.at(2), free_run.tokens.at(2));
  // And the same tokens as the CPU backend, session for session.
  const StreamRun cpu_run = stream(make_cpu_backend(model, 1), model, batched);
  EXPECT_EQ(cpu_run.tokens, free_run.tokens);
}

H2O_CUDA_INSTANTIATE(BatchedOrNot, KvLimit, ::testing::Bool(),
                     [](const auto& info) { return info.param ? "Batched" : "OneByOne"; });

H2O_CUDA_TEST(KvMemory, CachesBookAndReleaseTheirDeviceBytes) {
  H2O_REQUIRE_CUDA();
  auto model = tiny_model();
  const ModelConfig& c = model->config;
  // Per token, every (layer, KV head): K and V (f32) + position + score.
  const int64_t row = int64_t(c.n_layers) * c.n_kv_heads * (c.head_dim() * 4 * 2 + 8);
  // The full cache grows 64, 96, 144, 216 rows, as the CPU cache: a limit of 150 rows holds 144.
  auto backend = cuda(model, 150 * row);
  const int token = 1;
  for (int round = 0; round < 2; ++round) {
    auto cache = backend->new_cache(PolicyConfig{});
    int fed = 0;
    try {
      for (; fed < 1000; ++fed) feed_one(*backend, *cache, token, TokenChoice{});
    } catch (const SessionFailure& f) {
      EXPECT_EQ(f.item(), 0u);
      EXPECT_NE(std::string(f.what()).find("out of KV memory"), std::string::npos) << f.what();
    }
    EXPECT_EQ(fed, 144) << "round " << round;
    EXPECT_EQ(cache->allocated_bytes(), 144 * row);
    EXPECT_EQ(cache->tokens_seen(), 144);  // the failed step changed nothing
    EXPECT_EQ(cache->live_bytes(), 144 * int64_t(c.n_layers) * c.n_kv_heads * c.head_dim() * 4 * 2);
  }
  EXPECT_EQ(backend->peak_kv_bytes(), 144 * row);
}

#ifdef H2O_SIMT
// A device that is full (cudaMalloc fails) stops the session that needed the
// memory, as the KV limit does: only the emulation can fill its device on demand.
H2O_CUDA_TEST(KvMemory, AFullDeviceStopsTheSessionAlone) {
  auto model = tiny_model();
  auto backend = cuda(model);
  auto full = backend->new_cache(PolicyConfig{});
  auto bounded = backend->new_cache(three_policies()[1]);
  int token = 1;
  for (int i = 0; i < 40; ++i) {  // both caches have their first reservation, the scratch its size
    ForwardItem items[2];
    for (int k = 0; k < 2; ++k) items[k].cache = k ? bounded.get() : full.get(), items[k].tokens = std::span<const int>(&token, 1);
    backend->forward(items);
  }
  gpu::emu::set_memory_limit(gpu::emu::allocated_bytes() + 1024);
  try {
    for (int i = 40; i < 200; ++i) {
      ForwardItem items[2];
      for (int k = 0; k < 2; ++k) items[k].cache = k ? bounded.get() : full.get(), items[k].tokens = std::span<const int>(&token, 1);
      backend->forward(items);
    }
    ADD_FAILURE() << "the full cache grew past a full device";
  } catch (const SessionFailure& f) {
    EXPECT_EQ(f.item(), 0u);
    EXPECT_NE(std::string(f.what()).find("out of device memory"), std::string::npos) << f.what();
    EXPECT_EQ(full->tokens_seen(), 64);  // it filled its first 64 rows, then could not grow
    EXPECT_EQ(bounded->tokens_seen(), 64);
  }
  gpu::emu::set_memory_limit(0);
  // The other session goes on alone.
  ForwardItem item;
  item.cache = bounded.get();
  item.tokens = std::span<const int>(&token, 1);
  backend->forward(std::span<ForwardItem>(&item, 1));
  EXPECT_EQ(bounded->tokens_seen(), 65);
}
#endif

// --kv-bits 16 is what an f16 device cache keeps: the same tokens and bytes as
// the native policy at f16; one line naming the flag for rolling positions on
// an f32 cache (which keeps it in the quantized layout: CudaEmuLowBit.Streams*).
H2O_CUDA_TEST(Engine, SixteenBitKvIsTheF16CacheItKeeps) {
  H2O_REQUIRE_CUDA();
  const auto model = tiny_model();
  std::vector<PolicyConfig> policies = three_policies();
  for (PolicyConfig p : three_policies()) {
    p.kv = parse_kv_bits("16");
    policies.push_back(p);
  }
  const StreamRun run = stream(test::cuda_backend(model, test::cpu_projection_tuning(), "f16"), model, true, {}, policies);
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(run.tokens.at(i).empty());
    EXPECT_EQ(run.tokens.at(i + 3), run.tokens.at(i)) << policies[size_t(i)].describe();
    EXPECT_EQ(run.allocated[size_t(i + 3)], run.allocated[size_t(i)]);
  }
  // An f32 device cache keeps it in the quantized layout's f16 runs, which cannot turn keys again.
  auto f32 = test::cuda_backend(model, test::cpu_projection_tuning(), "f32");
  PolicyConfig rolling = policies[5];
  rolling.rolling = true;
  try {
    (void)f32->new_cache(rolling);
    FAIL() << "an f32 cache took 16-bit KV with rolling positions";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--kv-bits: 16bit KV with --position-rolling on the cuda"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("--precision f16"), std::string::npos) << e.what();
  }
}

H2O_CUDA_TEST(Engine, SamplingPicksTheCpuBackendsTokens) {
  H2O_REQUIRE_CUDA();
  auto model = tiny_model();
  SamplingConfig sampling{0.9f, 0.8f, 42};
  std::vector<PolicyConfig> policies = three_policies();
  policies.push_back(PolicyConfig::named("tova").set("sinks", 4).set("window", 28));
  const StreamRun cpu_run = stream(make_cpu_backend(model, 1), model, true, sampling, policies);
  const StreamRun gpu_run = stream(cuda(model), model, true, sampling, policies);
  EXPECT_EQ(gpu_run.tokens, cpu_run.tokens);
  SamplingConfig no_cut{1.2f, 1.0f, 7};  // top_p 1: the id-order walk
  EXPECT_EQ(stream(cuda(model), model, false, no_cut).tokens, stream(make_cpu_backend(model, 1), model, false, no_cut).tokens);
}

class H2O_CUDA_SUITE(Forced) : public ::testing::TestWithParam<bool> {};

// Teacher forcing: NLL, KL(full || policy) and agreement computed on the
// device equal the CPU backend's (doubles there), batched or one by one.
H2O_CUDA_TEST_P(Forced, ScoresEqualTheCpuBackend) {
  H2O_REQUIRE_CUDA();
  auto model = tiny_model();
  std::vector<int> text;
  for (int i = 0; i < 70; ++i) text.push_back((i * 37 + 1) % 512);
  auto run = [&](std::unique_ptr<Backend> backend, int chunk) {
    EngineOptions o;
    o.policies = three_policies();
    o.batched = GetParam();
    o.forced_chunk = chunk;
    Engine engine(model, std::move(backend), make_byte_tokenizer(512), o);
    engine.start_forced(text);
    std::map<int, std::vector<double>> nll, kl;
    std::map<int, std::vector<int>> agree;
    while (!engine.done())
      for (const SessionRecord& s : engine.step().sessions) {
        nll[s.session].insert(nll[s.session].end(), s.nll.begin(), s.nll.end());
        kl[s.session].insert(kl[s.session].end(), s.kl.begin(), s.kl.end());
        agree[s.session].insert(agree[s.session].end(), s.agree.begin(), s.agree.end());
      }
    return std::make_tuple(nll, kl, agree);
  };
  for (int chunk : {1, 4}) {
    const auto [cn, ck, ca] = run(make_cpu_backend(model, 1), chunk);
    const auto [gn, gk, ga] = run(cuda(model), chunk);
    for (int s = 0; s < 3; ++s) {
      ASSERT_EQ(gn.at(s).size(), cn.at(s).size());
      ASSERT_EQ(gn.at(s).size(), text.size() - 1);
      ASSERT_EQ(gk.at(s).size(), ck.at(s).size()) << "session " << s;
      for (size_t i = 0; i < cn.at(s).size(); ++i) ASSERT_NEAR(gn.at(s)[i], cn.at(s)[i], 1e-4 * std::max(1.0, cn.at(s)[i]));
      for (size_t i = 0; i < ck.at(s).size(); ++i) ASSERT_NEAR(gk.at(s)[i], ck.at(s)[i], 1e-4);
      EXPECT_EQ(ga.at(s), ca.at(s)) << "session " << s;
    }
    // The reference against itself: no divergence, full agreement.
    for (double k : gk.at(0)) EXPECT_NEAR(k, 0.0, 1e-12);
    EXPECT_GT(std::accumulate(gk.at(2).begin(), gk.at(2).end(), 0.0), 0.0);
  }
}

H2O_CUDA_INSTANTIATE(BatchedOrNot, Forced, ::testing::Bool(),
                     [](const auto& info) { return info.param ? "Batched" : "OneByOne"; });

// Decode steps from graphs: the same tokens and kept sets as eager steps,
// and graphs really replayed (one capture per shape, not per step).
H2O_CUDA_TEST(Graphs, ReplaysGiveWhatEagerStepsGive) {
  H2O_REQUIRE_CUDA();
  auto model = tiny_model();
  CudaTuning eager = test::cpu_projection_tuning(), graphs = eager;
  eager.graphs = false;
  graphs.graphs = true;
  std::vector<PolicyConfig> policies = three_policies();
  policies.push_back(PolicyConfig::named("tova").set("sinks", 4).set("window", 28));
  policies[2].rolling = true;
  auto with = cuda(model, 0, graphs), without = cuda(model, 0, eager);
  const Backend* with_ptr = with.get();
  const Backend* without_ptr = without.get();
  EngineOptions o;
  o.policies = policies;
  o.max_new_tokens = 60;
  o.batched = true;
  Engine a(model, std::move(with), make_byte_tokenizer(512), o), b(model, std::move(without), make_byte_tokenizer(512), o);
  a.start_stream(turns(2));
  b.start_stream(turns(2));
  while (!a.done()) {
    const StepRecord ra = a.step(), rb = b.step();
    ASSERT_EQ(ra.sessions.size(), rb.sessions.size());
    for (size_t s = 0; s < ra.sessions.size(); ++s) {
      ASSERT_EQ(ra.sessions[s].token, rb.sessions[s].token) << "step " << ra.step;
      ASSERT_EQ(ra.sessions[s].evictions, rb.sessions[s].evictions) << "step " << ra.step;
    }
  }
  EXPECT_TRUE(b.done());
  for (size_t s = 0; s < policies.size(); ++s)
    for (int l = 0; l < model->config.n_layers; ++l)
      EXPECT_EQ(a.sessions()[s]->cache().read_layer(l).positions, b.sessions()[s]->cache().read_layer(l).positions);
  const CudaBackendStats sa = cuda_backend_stats(*with_ptr), sb = cuda_backend_stats(*without_ptr);
  EXPECT_EQ(sb.graph_replays + sb.graph_captures, 0);
  EXPECT_GT(sa.graph_replays, 100);
  EXPECT_LT(sa.graph_captures, 10);  // one per shape: the cache's split bucket, a cut or none
  EXPECT_EQ(sa.forwards, sb.forwards);
}

// The app's steps: the watched layer's attention every step, every layer's
// now and then, the layer's positions and scores after the cut. Replayed
// from graphs they capture what eager steps capture, and they do replay.
class AppLikeSchedule final : public CaptureSchedule {
 public:
  CapturePlan plan(int64_t step, const Session&) const override {
    CapturePlan plan;
    CaptureRequest watched;
    watched.layer = 1;
    watched.rows = 1;
    watched.max_keys = 20;
    watched.keep_first = 4;
    watched.top_k = 4;
    plan.attention.push_back(watched);
    if (step % 5 == 0) {
      CaptureRequest other = watched;
      other.layer = 0;
      other.head = kGroupMean;
      plan.attention.push_back(other);
    }
    plan.layer_states.push_back(1);
    return plan;
  }
};

H2O_CUDA_TEST(Graphs, AppStepsWithCapturesReplayToo) {
  H2O_REQUIRE_CUDA();
  auto model = tiny_model();
  CudaTuning eager = test::test_tuning(), graphs = eager;
  eager.graphs = false;
  graphs.graphs = true;
  auto with = cuda(model, 0, graphs), without = cuda(model, 0, eager);
  const Backend* with_ptr = with.get();
  EngineOptions o;
  o.policies = three_policies();
  o.max_new_tokens = 40;
  o.batched = true;
  Engine a(model, std::move(with), make_byte_tokenizer(512), o), b(model, std::move(without), make_byte_tokenizer(512), o);
  a.start_stream(turns(1));
  b.start_stream(turns(1));
  const AppLikeSchedule schedule;
  while (!a.done()) {
    const StepRecord ra = a.step(&schedule), rb = b.step(&schedule);
    ASSERT_EQ(ra.sessions.size(), rb.sessions.size());
    for (size_t s = 0; s < ra.sessions.size(); ++s) {
      const SessionRecord &x = ra.sessions[s], &y = rb.sessions[s];
      ASSERT_EQ(x.token, y.token) << "step " << ra.step;
      ASSERT_EQ(x.attention.size(), y.attention.size()) << "step " << ra.step;
      for (size_t c = 0; c < x.attention.size(); ++c) {
        EXPECT_EQ(x.attention[c].key_positions, y.attention[c].key_positions) << "step " << ra.step;
        EXPECT_EQ(x.attention[c].probs, y.attention[c].probs) << "step " << ra.step;
        for (size_t h = 0; h < x.attention[c].top_share.size(); ++h) {  // NaN where a row has no share
          if (!std::isnan(y.attention[c].top_share[h])) {
            EXPECT_EQ(x.attention[c].top_share[h], y.attention[c].top_share[h]);
          }
        }
      }
      ASSERT_EQ(x.layer_states.size(), 1u);
      EXPECT_EQ(x.layer_states[0].positions, y.layer_states[0].positions) << "step " << ra.step;
      EXPECT_EQ(x.layer_states[0].scores, y.layer_states[0].scores) << "step " << ra.step;
    }
  }
  EXPECT_GT(cuda_backend_stats(*with_ptr).graph_replays, 20);
}

H2O_CUDA_TEST(Graphs, TimingAndDeviceName) {
  H2O_REQUIRE_CUDA();
  auto model = tiny_model();
  CudaTuning t = test::cpu_projection_tuning();
  t.timing = true;
  auto backend = cuda(model, 0, t);
  EXPECT_TRUE(std::isnan(cuda_last_forward_ms(*backend)));
  auto cache = backend->new_cache(PolicyConfig{});
  feed_one(*backend, *cache, 1, TokenChoice{});
  EXPECT_GE(cuda_last_forward_ms(*backend), 0.0);
  EXPECT_FALSE(cuda_backend_stats(*backend).device.empty());
  EXPECT_NE(backend->describe().find(cuda_backend_stats(*backend).device), std::string::npos);
  auto cpu = make_cpu_backend(model, 1);
  EXPECT_TRUE(std::isnan(cuda_last_forward_ms(*cpu)));
  EXPECT_EQ(cuda_backend_stats(*cpu).forwards, 0);
  EXPECT_GT(cuda_copy_bandwidth_gbs(1 << 20, 3), 0.0);
}

// h2o-bench --op-times: every operation of a decode step is timed once per
// layer (once per step outside the layers), the projections and attention
// carry the bytes they must move, graphs are bypassed while timing, and
// switching on again starts the totals afresh.
H2O_CUDA_TEST(Graphs, OpTimesNameEveryOperationOfAStep) {
  H2O_REQUIRE_CUDA();
  auto model = tiny_model();
  const ModelConfig& c = model->config;
  auto backend = cuda(model, 0, test::test_tuning());
  auto h2o_cache = backend->new_cache(PolicyConfig::named("h2o").set("sinks", 2).set("heavy", 3).set("recent", 3));
  for (int t = 0; t < 8; ++t) feed_one(*backend, *h2o_cache, 1 + t, TokenChoice{});  // past its budget of 8
  ASSERT_TRUE(cuda_set_op_timing(*backend, true));
  const int64_t replays = cuda_backend_stats(*backend).graph_replays;
  feed_one(*backend, *h2o_cache, 3, TokenChoice{});
  feed_one(*backend, *h2o_cache, 4, TokenChoice{});
  EXPECT_EQ(cuda_backend_stats(*backend).graph_replays, replays);  // eager while timing
  std::map<std::string, CudaOpTime> ops;
  for (const CudaOpTime& t : cuda_op_times(*backend)) ops[t.op] = t;
  for (const char* op : {"gemm q|k|v", "rope_append", "attention", "attention_scores",
                         "gemm o", "gemm gate|up", "swiglu", "gemm down"}) {
    ASSERT_TRUE(ops.count(op)) << op;
    EXPECT_EQ(ops[op].launches, 2 * c.n_layers) << op;
    EXPECT_GE(ops[op].ms, 0.0) << op;
  }
  EXPECT_EQ(ops["rmsnorm"].launches, 2 * (2 * c.n_layers + 1));
  EXPECT_EQ(ops["evict"].launches, 2);  // each step past the budget cuts
  EXPECT_EQ(ops["gemm o"].bytes, 2 * int64_t(c.n_layers) * c.dim * c.dim * 4);  // f32 weights, twice
  EXPECT_GT(ops["attention"].bytes, 0);
  EXPECT_FALSE(ops.count("attention_combine"));  // folded into the attention's last split blocks
  ASSERT_TRUE(cuda_set_op_timing(*backend, true));
  EXPECT_TRUE(cuda_op_times(*backend).empty());
  cuda_set_op_timing(*backend, false);
  feed_one(*backend, *h2o_cache, 5, TokenChoice{});
  EXPECT_TRUE(cuda_op_times(*backend).empty());
  auto cpu = make_cpu_backend(model, 1);
  EXPECT_FALSE(cuda_set_op_timing(*cpu, true));
}
