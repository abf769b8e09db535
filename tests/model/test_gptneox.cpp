// GPT-NeoX (Pythia): the synthetic shapes, the GGUF writer and loader (fused
// attn_qkv, RoPE's half-split rows over a partial rotary part), the Hugging
// Face folder loader (query_key_value interleaved per head), their refusals,
// and the CPU backend's log-likelihoods against llama.cpp's on the same file.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/cpu/cpu_backend.h"
#include "core/model/gguf_writer.h"
#include "core/model/model.h"
#include "core/runtime/forced_scoring.h"
#include "tests/assets.h"
#include "tests/error_helpers.h"
#include "tests/model_writers.h"

namespace h2o::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Logits of every row of `tokens`, fed as one chunk.
std::vector<float> all_logits(std::shared_ptr<const Model> model, const std::vector<int>& tokens) {
  auto backend = make_cpu_backend(model, 2);
  auto cache = backend->new_cache(PolicyConfig{});
  std::vector<float> logits;
  ForwardItem item;
  item.cache = cache.get();
  item.tokens = tokens;
  item.all_logits = true;
  item.logits = &logits;
  backend->forward(std::span<ForwardItem>(&item, 1));
  return logits;
}

// -log p(tokens[t + 1] | tokens[..t]) for every t but the last, scored as eval scores.
std::vector<double> nlls(std::shared_ptr<const Model> model, const std::vector<int>& tokens) {
  return next_token_nlls(all_logits(model, tokens), tokens, model->config.vocab_size);
}

std::vector<int> some_tokens(int n, int vocab) {
  std::vector<int> t;
  for (int i = 0; i < n; ++i) t.push_back(int((int64_t(i) * 7919 + 13) % vocab));
  return t;
}

std::shared_ptr<const Model> pythia(DType type = DType::F32, int vocab = 0) {
  return make_synthetic({"pythia-test", 1234, type, vocab, 0});
}

// ---- shapes ----------------------------------------------------------------

TEST(GptNeox, SyntheticShapes) {
  const ModelConfig c = synthetic_shape("pythia-70m");
  EXPECT_EQ(c.architecture, "gptneox");
  EXPECT_EQ(c.norm, NormKind::Layer);
  EXPECT_EQ(c.ffn, FfnKind::Gelu);
  EXPECT_TRUE(c.parallel_residual && c.attention_bias && c.output_bias);
  EXPECT_EQ(c.rotary_dims, 16);  // a quarter of 64
  // Pythia-70M: 70,426,624 parameters with its untied classifier (embed_out).
  EXPECT_EQ(c.parameter_count() + int64_t(c.vocab_size) * c.dim, 70426624);
  EXPECT_EQ(synthetic_shape("pythia-2.8b").rotary_dims, 20);  // a quarter of 80
  const auto m = pythia();
  EXPECT_FALSE(m->shared_classifier());
  EXPECT_EQ(m->weights.layers[0].w1.data, nullptr);  // no gate in a GELU MLP
  for (const Tensor* t : {&m->weights.layers[0].bo, &m->weights.layers[0].b2, &m->weights.layers[0].b3,
                          &m->weights.layers[0].attn_norm_bias, &m->weights.final_norm_bias})
    EXPECT_NE(t->data, nullptr);
}

// ---- GGUF ------------------------------------------------------------------

void expect_same_tensors(const Model& a, const Model& b) {
  const auto ta = a.all_tensors(), tb = b.all_tensors();
  ASSERT_EQ(ta.size(), tb.size());
  for (size_t i = 0; i < ta.size(); ++i) {
    SCOPED_TRACE(i);
    ASSERT_EQ(ta[i]->rows, tb[i]->rows);
    ASSERT_EQ(ta[i]->cols, tb[i]->cols);
    ASSERT_EQ(ta[i]->dtype, tb[i]->dtype);
    EXPECT_EQ(std::memcmp(ta[i]->data, tb[i]->data, size_t(ta[i]->bytes())), 0);
  }
}

TEST(GptNeox, GgufRoundTripF32AndQ8_0) {
  const auto dir = temp_dir("gptneox-gguf");
  for (DType type : {DType::F32, DType::Q8_0}) {
    SCOPED_TRACE(dtype_name(type));
    const auto original = pythia(type);
    const std::string path = (dir / "pythia.gguf").string();
    write_gguf(*original, path, TypeMix(type));
    const auto loaded = load_gguf(path);
    const ModelConfig& c = loaded->config;
    EXPECT_EQ(c.architecture, "gptneox");
    EXPECT_EQ(c.rotary_dims, 4);
    EXPECT_TRUE(c.parallel_residual);
    EXPECT_EQ(c.norm, NormKind::Layer);
    EXPECT_FLOAT_EQ(c.norm_eps, original->config.norm_eps);
    // The fused, half-split rows come back as the interleaved q, k and v they were.
    expect_same_tensors(*original, *loaded);
    const auto tokens = some_tokens(20, c.vocab_size);
    EXPECT_EQ(all_logits(original, tokens), all_logits(loaded, tokens));
  }
  fs::remove_all(dir);
}

// use_parallel_residual false: the sequential form, as GPT-NeoX's config allows.
TEST(GptNeox, GgufSequentialResidual) {
  const auto dir = temp_dir("gptneox-sequential");
  auto sequential = std::make_shared<Model>(*pythia());
  sequential->config.parallel_residual = false;
  const std::string path = (dir / "sequential.gguf").string();
  write_gguf(*sequential, path, TypeMix(DType::F32));
  const auto loaded = load_gguf(path);
  EXPECT_FALSE(loaded->config.parallel_residual);
  const auto tokens = some_tokens(12, sequential->config.vocab_size);
  const auto logits = all_logits(loaded, tokens);
  EXPECT_EQ(all_logits(sequential, tokens), logits);
  EXPECT_NE(all_logits(pythia(), tokens), logits);  // the residual form matters
  fs::remove_all(dir);
}

// A valid gptneox file, then edited in place: the bytes of `from` become `to` (same length).
std::string edited_gguf(const fs::path& dir, const std::string& name, const std::string& from, const std::string& to) {
  const fs::path path = dir / name;
  write_gguf(*pythia(), path.string(), TypeMix(DType::F32));
  std::vector<uint8_t> bytes = read_file(path);
  const std::string text(bytes.begin(), bytes.end());
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  std::memcpy(&bytes[at], to.data(), to.size());
  write_file(path, bytes);
  return path.string();
}

TEST(GptNeox, GgufRefusals) {
  const auto dir = temp_dir("gptneox-bad");
  const std::string no_bias = edited_gguf(dir, "no-bias.gguf", "blk.1.ffn_up.bias", "blk.1.ffn_up.bixs");
  expect_one_line(error_of([&] { load_gguf(no_bias); }), no_bias, "missing tensor blk.1.ffn_up.bias");
  // rope.dimension_count: a u32 after its key and type; 4 -> 5 (half a pair), 4 -> 18 (past the head's 16).
  std::string key = "gptneox.rope.dimension_count";
  key += std::string("\x04\0\0\0\x04\0\0\0", 8);
  std::string odd = key, wide = key;
  odd[odd.size() - 4] = 5;
  wide[wide.size() - 4] = 18;
  for (const auto& [name, edited] : {std::pair{"odd-rotary.gguf", odd}, std::pair{"wide-rotary.gguf", wide}}) {
    const std::string path = edited_gguf(dir, name, key, edited);
    expect_one_line(error_of([&] { load_gguf(path); }), path, "not a whole number of pairs within the head");
  }
  // Reliability round 4: these ran silently wrong (RoPE over the whole head; the embedding as classifier).
  std::string none = key;
  none[none.size() - 4] = 0;
  const std::string no_rotary = edited_gguf(dir, "no-rotary.gguf", key, none);
  expect_one_line(error_of([&] { load_gguf(no_rotary); }), no_rotary, "rope.dimension_count 0: a model that rotates no dimension");
  // The tensor's name as GGUF stores it, its u64 length first ("blk.N.attn_output.weight" holds it too).
  const std::string name_of_13(std::string("\x0d\0\0\0\0\0\0\0", 8));
  const std::string no_output =
      edited_gguf(dir, "no-output.gguf", name_of_13 + "output.weight", name_of_13 + "output.weixht");
  expect_one_line(error_of([&] { load_gguf(no_output); }), no_output, "output.weight");
  fs::remove_all(dir);
}

// ---- Hugging Face ------------------------------------------------------------

// A q or k part (or its bias) back in Hugging Face's order: per head, the
// rotary rows half-split (row i pairs with i + rotated/2), the rest in place.
std::vector<float> half_split(const Tensor& t, int n_heads, int head_dim, int rotated) {
  const std::vector<float> v = tensor_values(t);
  const int64_t row = t.rows == 1 ? 1 : t.cols;
  std::vector<float> out(v);
  for (int h = 0; h < n_heads; ++h)
    for (int i = 0; i < rotated; ++i) {
      const int64_t from = int64_t(h) * head_dim + (i < rotated / 2 ? 2 * i : 2 * (i - rotated / 2) + 1);
      std::copy_n(&v[size_t(from * row)], row, &out[size_t((int64_t(h) * head_dim + i) * row)]);
    }
  return out;
}

// query_key_value: per head, its q, k and v rows.
std::vector<float> fused(const LayerWeights& l, const ModelConfig& c, bool bias) {
  const int hd = c.head_dim(), rot = c.rotated_dims();
  const auto q = half_split(bias ? l.bq : l.wq, c.n_heads, hd, rot), k = half_split(bias ? l.bk : l.wk, c.n_heads, hd, rot);
  const auto v = tensor_values(bias ? l.bv : l.wv);
  const size_t block = q.size() / size_t(c.n_heads);
  std::vector<float> out;
  for (int h = 0; h < c.n_heads; ++h)
    for (const auto* part : {&q, &k, &v}) out.insert(out.end(), part->begin() + h * block, part->begin() + (h + 1) * block);
  return out;
}

StTensor st(const std::string& name, const std::vector<float>& values, std::vector<uint64_t> shape) {
  return {name, "F32", std::move(shape), encode(values, DType::F32)};
}
StTensor st(const std::string& name, const Tensor& t) {
  return t.rows == 1 ? st(name, tensor_values(t), {uint64_t(t.cols)})
                     : st(name, tensor_values(t), {uint64_t(t.rows), uint64_t(t.cols)});
}

json neox_config(const ModelConfig& c) {
  return {{"architectures", {"GPTNeoXForCausalLM"}}, {"model_type", "gpt_neox"}, {"hidden_act", "gelu"},
          {"hidden_size", c.dim}, {"intermediate_size", c.hidden_dim}, {"num_hidden_layers", c.n_layers},
          {"num_attention_heads", c.n_heads}, {"vocab_size", c.vocab_size}, {"max_position_embeddings", c.max_seq_len},
          {"rotary_pct", double(c.rotary_dims) / c.head_dim()}, {"rotary_emb_base", c.rope_theta},
          {"layer_norm_eps", c.norm_eps}, {"use_parallel_residual", c.parallel_residual},
          {"tie_word_embeddings", false}, {"bos_token_id", 0}, {"eos_token_id", 0}};
}

void write_neox_folder(const fs::path& dir, const Model& m, const json& config, bool with_classifier = true) {
  const ModelConfig& c = m.config;
  const uint64_t d = uint64_t(c.dim);
  std::vector<StTensor> t = {st("gpt_neox.embed_in.weight", m.weights.token_embedding)};
  for (int i = 0; i < c.n_layers; ++i) {
    const LayerWeights& l = m.weights.layers[size_t(i)];
    const std::string p = "gpt_neox.layers." + std::to_string(i) + ".";
    t.push_back(st(p + "input_layernorm.weight", l.attn_norm));
    t.push_back(st(p + "input_layernorm.bias", l.attn_norm_bias));
    t.push_back(st(p + "attention.query_key_value.weight", fused(l, c, false), {3 * d, d}));
    t.push_back(st(p + "attention.query_key_value.bias", fused(l, c, true), {3 * d}));
    t.push_back(st(p + "attention.dense.weight", l.wo));
    t.push_back(st(p + "attention.dense.bias", l.bo));
    t.push_back(st(p + "post_attention_layernorm.weight", l.ffn_norm));
    t.push_back(st(p + "post_attention_layernorm.bias", l.ffn_norm_bias));
    t.push_back(st(p + "mlp.dense_h_to_4h.weight", l.w3));
    t.push_back(st(p + "mlp.dense_h_to_4h.bias", l.b3));
    t.push_back(st(p + "mlp.dense_4h_to_h.weight", l.w2));
    t.push_back(st(p + "mlp.dense_4h_to_h.bias", l.b2));
  }
  t.push_back(st("gpt_neox.final_layer_norm.weight", m.weights.final_norm));
  t.push_back(st("gpt_neox.final_layer_norm.bias", m.weights.final_norm_bias));
  if (with_classifier) t.push_back(st("embed_out.weight", m.weights.classifier));
  fs::create_directories(dir);
  write_safetensors(dir / "model.safetensors", t);
  std::ofstream(dir / "config.json") << config.dump(2);
}

TEST(GptNeox, HuggingFaceFolderLoadsAsTheSameModel) {
  const auto dir = temp_dir("gptneox-hf");
  const auto original = pythia();
  write_neox_folder(dir, *original, neox_config(original->config));
  const auto loaded = load_safetensors(dir.string());
  EXPECT_EQ(loaded->config.architecture, "gptneox");
  EXPECT_EQ(loaded->config.rotary_dims, 4);
  expect_same_tensors(*original, *loaded);
  const auto tokens = some_tokens(20, original->config.vocab_size);
  EXPECT_EQ(all_logits(original, tokens), all_logits(loaded, tokens));
  fs::remove_all(dir);
}

TEST(GptNeox, HuggingFaceRefusals) {
  const auto dir = temp_dir("gptneox-hf-bad");
  const auto m = pythia();
  json config = neox_config(m->config);
  config["hidden_act"] = "gelu_new";
  write_neox_folder(dir, *m, config);
  const std::string file = (dir / "config.json").string();
  expect_one_line(error_of([&] { load_safetensors(dir.string()); }), file, "hidden_act gelu_new is not supported");
  config = neox_config(m->config);
  config["rotary_pct"] = 0.3;  // 4.8 of 16 dimensions: int() gives 4, as Hugging Face computes it
  std::ofstream(dir / "config.json") << config.dump(2);
  EXPECT_EQ(load_safetensors(dir.string())->config.rotary_dims, 4);
  config["rotary_pct"] = 0.2;  // 3.2 -> 3 dimensions: half a pair
  std::ofstream(dir / "config.json") << config.dump(2);
  expect_one_line(error_of([&] { load_safetensors(dir.string()); }), file, "not a whole number of pairs");
  // Reliability round 4: these ran silently wrong (RoPE over the whole head; the embedding as classifier).
  config["rotary_pct"] = 0.01;  // 0.16 of 16 dimensions: none
  std::ofstream(dir / "config.json") << config.dump(2);
  expect_one_line(error_of([&] { load_safetensors(dir.string()); }), file, "rotates no dimension of a head of 16");
  fs::remove_all(dir);
  write_neox_folder(dir, *m, neox_config(m->config), /*with_classifier=*/false);
  const std::string e = error_of([&] { load_safetensors(dir.string()); });
  EXPECT_NE(e.find("embed_out.weight"), std::string::npos) << e;
  fs::remove_all(dir);
}

// ---- llama.cpp parity ----------------------------------------------------------

// tests/data/gptneox_llamacpp_nll.json holds llama.cpp's per-token NLLs for
// pythia-test (seed 1234, vocab 50432) written as GGUF by this project's
// writer; the same model here must score the same tokens alike.
TEST(GptNeox, MatchesLlamaCppNlls) {
  std::ifstream in(std::string(H2O_TEST_DATA) + "/gptneox_llamacpp_nll.json");
  ASSERT_TRUE(in) << "tests/data/gptneox_llamacpp_nll.json";
  const json data = json::parse(in);
  const std::vector<int> tokens = data.at("tokens").get<std::vector<int>>();
  const auto dir = temp_dir("gptneox-parity");
  for (const auto& [name, file] : data.at("files").items()) {
    SCOPED_TRACE(name);
    const DType type = name == "q8_0" ? DType::Q8_0 : DType::F32;
    const std::string path = (dir / (name + ".gguf")).string();
    write_gguf(*pythia(type, data.at("vocab").get<int>()), path, TypeMix(type));
    const std::vector<double> ours = nlls(load_gguf(path), tokens);
    const std::vector<double> theirs = file.at("nll").get<std::vector<double>>();
    ASSERT_EQ(ours.size(), theirs.size());
    double mean = 0, worst = 0;
    for (size_t i = 0; i < ours.size(); ++i) {
      const double delta = std::abs(ours[i] - theirs[i]);
      mean += delta / double(ours.size());
      worst = std::max(worst, delta);
    }
    RecordProperty(name + "_mean_abs_delta_nll", std::to_string(mean));
    RecordProperty(name + "_max_abs_delta_nll", std::to_string(worst));
    EXPECT_LE(mean, 0.01);
    EXPECT_LE(worst, 0.05);
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace h2o::test
