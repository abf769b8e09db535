// Model loaders (llama2.c, GGUF, safetensors) and synthetic models. The tests
// write their own small checkpoints (tests/model_writers.h), load them back
// and compare every tensor; then they break the files in the ways real files
// break (truncation, corrupt headers, absurd counts, wrong types and shapes)
// and check each failure is one h2o::Error line naming the file.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "tests/assets.h"
#include "core/base/error.h"
#include "core/base/mapped_file.h"
#include "core/base/system_limits.h"
#include "core/model/model.h"
#include "tests/model_writers.h"

namespace h2o::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// ---- helpers ---------------------------------------------------------------

// `load` must throw h2o::Error whose message names `file`, is one line, and
// contains `fragment`; anything else (no error, another exception) fails.
template <typename F>
void expect_error(F&& load, const std::string& file, const std::string& fragment = "") {
  try {
    load();
    ADD_FAILURE() << "loaded without error; expected one naming " << file << " (" << fragment << ")";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(file), std::string::npos) << "message does not name " << file << ": " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "message has a newline: " << msg;
    if (!fragment.empty()) {
      EXPECT_NE(msg.find(fragment), std::string::npos) << "expected \"" << fragment << "\" in: " << msg;
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a non-h2o exception: " << e.what();
  }
}

void expect_load_error(const fs::path& path, const std::string& fragment = "") {
  expect_error([&] { load_model(path.string()); }, path.string(), fragment);
}

// Loading must either succeed or throw h2o::Error: used on random corruptions.
void expect_no_crash(const fs::path& path) {
  try {
    load_model(path.string());
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a non-h2o exception: " << e.what();
  }
}

void expect_tensor(const Tensor& t, const std::vector<float>& values, int64_t rows, int64_t cols, DType dtype,
                   const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_NE(t.data, nullptr);
  EXPECT_EQ(t.rows, rows);
  EXPECT_EQ(t.cols, cols);
  EXPECT_EQ(t.dtype, dtype);
  ASSERT_EQ(size_t(t.numel()), values.size());
  EXPECT_EQ(tensor_values(t), rounded(values, dtype));
}

// Every tensor of `model` equals `m` after storage in the given dtypes.
void expect_weights(const Model& model, const ModelArrays& m, DType matrix, DType norm) {
  const ModelConfig& c = m.config;
  const int64_t d = c.dim, h = c.hidden_dim, q = int64_t(c.n_heads) * c.head_dim(), kv = c.kv_dim();
  const ModelWeights& w = model.weights;
  expect_tensor(w.token_embedding, m.embedding, c.vocab_size, d, matrix, "embedding");
  ASSERT_EQ(w.layers.size(), m.layers.size());
  for (size_t l = 0; l < m.layers.size(); ++l) {
    const auto& L = m.layers[l];
    const auto& W = w.layers[l];
    const std::string p = "layer " + std::to_string(l) + " ";
    expect_tensor(W.attn_norm, L.attn_norm, 1, d, norm, p + "attn_norm");
    expect_tensor(W.wq, L.wq, q, d, matrix, p + "wq");
    expect_tensor(W.wk, L.wk, kv, d, matrix, p + "wk");
    expect_tensor(W.wv, L.wv, kv, d, matrix, p + "wv");
    expect_tensor(W.wo, L.wo, d, q, matrix, p + "wo");
    expect_tensor(W.ffn_norm, L.ffn_norm, 1, d, norm, p + "ffn_norm");
    expect_tensor(W.w1, L.w1, h, d, matrix, p + "w1");
    expect_tensor(W.w2, L.w2, d, h, matrix, p + "w2");
    expect_tensor(W.w3, L.w3, h, d, matrix, p + "w3");
  }
  expect_tensor(w.final_norm, m.final_norm, 1, d, norm, "final_norm");
  if (m.classifier.empty()) {
    EXPECT_TRUE(model.shared_classifier());
  } else {
    EXPECT_FALSE(model.shared_classifier());
    expect_tensor(w.classifier, m.classifier, c.vocab_size, d, matrix, "classifier");
  }
}

void expect_config(const ModelConfig& got, const ModelConfig& want) {
  EXPECT_EQ(got.dim, want.dim);
  EXPECT_EQ(got.hidden_dim, want.hidden_dim);
  EXPECT_EQ(got.n_layers, want.n_layers);
  EXPECT_EQ(got.n_heads, want.n_heads);
  EXPECT_EQ(got.n_kv_heads, want.n_kv_heads);
  EXPECT_EQ(got.vocab_size, want.vocab_size);
  EXPECT_EQ(got.max_seq_len, want.max_seq_len);
  EXPECT_FLOAT_EQ(got.rope_theta, want.rope_theta);
  EXPECT_FLOAT_EQ(got.norm_eps, want.norm_eps);
  EXPECT_EQ(got.bos_id, want.bos_id);
  EXPECT_EQ(got.eos_id, want.eos_id);
}

// Whether `t` is a view into the file `model.storage` maps (not a copy).
bool in_mapping(const Model& model, const Tensor& t) {
  const auto* file = static_cast<const MappedFile*>(model.storage.get());
  const auto* p = static_cast<const uint8_t*>(t.data);
  return file && p >= file->data() && p + t.bytes() <= file->data() + file->size();
}

std::vector<uint8_t> prefix(const std::vector<uint8_t>& bytes, size_t n) {
  return std::vector<uint8_t>(bytes.begin(), bytes.begin() + std::min(n, bytes.size()));
}

template <typename T>
void poke(std::vector<uint8_t>& bytes, size_t at, T value) {
  std::memcpy(&bytes[at], &value, sizeof(T));
}

// ---- llama2.c ----------------------------------------------------------------

TEST(LoaderLlama2c, SharedClassifierRoundTrip) {
  const auto dir = temp_dir("l2c-shared");
  const auto m = random_arrays(tiny_config(), 1, /*separate_classifier=*/false);
  write_llama2c(dir / "tiny.bin", m);
  for (auto model : {load_llama2c((dir / "tiny.bin").string()), load_model((dir / "tiny.bin").string())}) {
    EXPECT_EQ(model->format, "llama2c");
    EXPECT_EQ(model->path, (dir / "tiny.bin").string());
    expect_config(model->config, m.config);
    expect_weights(*model, m, DType::F32, DType::F32);
    EXPECT_FALSE(model->vocab.has_value());
    for (const Tensor* t : model->all_tensors()) EXPECT_TRUE(in_mapping(*model, *t));
  }
}

TEST(LoaderLlama2c, SeparateClassifierRoundTrip) {
  const auto dir = temp_dir("l2c-separate");
  const auto m = random_arrays(tiny_config(), 2, /*separate_classifier=*/true);
  write_llama2c(dir / "tiny.bin", m);
  auto model = load_llama2c((dir / "tiny.bin").string());
  expect_config(model->config, m.config);
  expect_weights(*model, m, DType::F32, DType::F32);
  EXPECT_EQ(model->weight_bytes(), (m.config.parameter_count() + int64_t(m.classifier.size())) * 4);
}

TEST(LoaderLlama2c, TruncatedAtSeveralPoints) {
  const auto dir = temp_dir("l2c-trunc");
  const auto bytes = llama2c_bytes(random_arrays(tiny_config(), 3, true));
  const fs::path path = dir / "cut.bin";
  for (size_t cut : {size_t(0), size_t(1), size_t(12), size_t(27), size_t(28), size_t(29), size_t(400), bytes.size() / 2,
                     bytes.size() - 4, bytes.size() - 1}) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    write_file(path, prefix(bytes, cut));
    expect_error([&] { load_llama2c(path.string()); }, path.string(), "truncated");
    if (cut >= 28) {
      expect_error([&] { load_llama2c(path.string()); }, path.string(),
                   "truncated: expected " + std::to_string(bytes.size()) + " bytes, file has " + std::to_string(cut));
    }
  }
}

TEST(LoaderLlama2c, TrailingBytesAreAnError) {
  const auto dir = temp_dir("l2c-trailing");
  auto bytes = llama2c_bytes(random_arrays(tiny_config(), 4, false));
  bytes.insert(bytes.end(), {0, 0, 0, 0});
  write_file(dir / "long.bin", bytes);
  expect_error([&] { load_llama2c((dir / "long.bin").string()); }, (dir / "long.bin").string(), "trailing bytes");
}

TEST(LoaderLlama2c, BadHeaderFields) {
  const auto dir = temp_dir("l2c-header");
  const auto good = llama2c_bytes(random_arrays(tiny_config(), 5, false));
  const fs::path path = dir / "bad.bin";
  auto with = [&](int field, int32_t value) {
    auto b = good;
    poke<int32_t>(b, size_t(field) * 4, value);
    write_file(path, b);
  };
  for (int field = 0; field < 7; ++field) {
    SCOPED_TRACE("field " + std::to_string(field));
    with(field, 0);
    expect_error([&] { load_llama2c(path.string()); }, path.string());
    if (field != 5) {  // a negative vocab_size is legal: it flags a separate classifier
      with(field, -3);
      expect_error([&] { load_llama2c(path.string()); }, path.string());
    }
    with(field, INT_MAX);  // overflow bait: must be refused, not wrapped around
    expect_error([&] { load_llama2c(path.string()); }, path.string());
  }
  with(5, INT_MIN);
  expect_error([&] { load_llama2c(path.string()); }, path.string(), "vocab_size");
  with(3, 3);  // dim 16 is not a multiple of 3 heads
  expect_error([&] { load_llama2c(path.string()); }, path.string(), "multiple");
  with(5, -32);  // claims a separate classifier the file does not have
  expect_error([&] { load_llama2c(path.string()); }, path.string(), "truncated");
  // A text (any file neither GGUF nor a folder is read as llama2.c): "not a model", not a shape.
  const std::string text = "# A README\n\nThe quick brown fox jumps over the lazy dog, again and again.\n";
  write_file(path, std::vector<uint8_t>(text.begin(), text.end()));
  expect_error([&] { load_llama2c(path.string()); }, path.string(), "not a model");
}

TEST(LoaderLlama2c, MissingFile) {
  const auto dir = temp_dir("l2c-missing");
  expect_load_error(dir / "nope.bin", "cannot open");
}

TEST(LoaderLlama2c, Stories260KAsset) {
  H2O_REQUIRE_ASSET("stories260K.bin");
  auto model = load_model(asset("stories260K.bin"));
  const ModelConfig& c = model->config;
  EXPECT_EQ(model->format, "llama2c");
  EXPECT_EQ(c.dim, 64);
  EXPECT_EQ(c.hidden_dim, 172);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.max_seq_len, 512);
  EXPECT_TRUE(model->shared_classifier());
  EXPECT_EQ(model->weights.layers[4].wk.rows, 32);
  // The last tensor ends exactly where the RoPE tables begin.
  const auto* end = static_cast<const uint8_t*>(model->weights.final_norm.data) + model->weights.final_norm.bytes();
  EXPECT_EQ(end + 512 * 8 * 4, static_cast<const uint8_t*>(model->weights.token_embedding.data) - 28 + 1056540);
  for (float v : tensor_values(model->weights.final_norm)) EXPECT_TRUE(std::isfinite(v) && v > 0);
}

TEST(LoaderLlama2c, Kjv1MAsset) {
  H2O_REQUIRE_ASSET("kjv-1M.bin");
  auto model = load_model(asset("kjv-1M.bin"));
  const ModelConfig& c = model->config;
  EXPECT_EQ(c.dim, 128);
  EXPECT_EQ(c.hidden_dim, 344);
  EXPECT_EQ(c.n_layers, 4);
  EXPECT_EQ(c.n_heads, 4);
  EXPECT_EQ(c.n_kv_heads, 2);
  EXPECT_EQ(c.vocab_size, 2048);
  EXPECT_EQ(c.max_seq_len, 256);
  EXPECT_TRUE(model->shared_classifier());
  EXPECT_EQ(model->weight_bytes(), c.parameter_count() * 4);
}

// ---- GGUF --------------------------------------------------------------------

ModelConfig gguf_config() {
  ModelConfig c = tiny_config();
  c.rope_theta = 500000.0f;  // non-default values prove the metadata is read
  c.norm_eps = 1e-6f;
  return c;
}

TEST(LoaderGguf, RoundTripEachDtype) {
  const auto dir = temp_dir("gguf-dtypes");
  const auto m = random_arrays(gguf_config(), 10, /*separate_classifier=*/true);
  for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const fs::path path = dir / (std::string("tiny-") + dtype_name(dtype) + ".gguf");
    write_gguf(path, m, {dtype, true});
    auto model = load_model(path.string());
    EXPECT_EQ(model->format, "gguf");
    expect_config(model->config, m.config);
    expect_weights(*model, m, dtype, DType::F32);
    EXPECT_EQ(model->weight_dtype(), dtype);
    for (const Tensor* t : model->all_tensors()) EXPECT_TRUE(in_mapping(*model, *t));
  }
}

TEST(LoaderGguf, WithoutOutputWeightSharesTheEmbedding) {
  const auto dir = temp_dir("gguf-shared");
  const auto m = random_arrays(gguf_config(), 11, /*separate_classifier=*/false);
  write_gguf(dir / "tied.gguf", m, {DType::F16, true});
  auto model = load_gguf((dir / "tied.gguf").string());
  EXPECT_TRUE(model->shared_classifier());
  expect_weights(*model, m, DType::F16, DType::F32);
}

TEST(LoaderGguf, EmbeddedVocabulary) {
  const auto dir = temp_dir("gguf-vocab");
  ModelConfig c = gguf_config();
  c.bos_id = 5;
  c.eos_id = 7;
  const auto m = random_arrays(c, 12, false);
  write_gguf(dir / "vocab.gguf", m);
  auto model = load_gguf((dir / "vocab.gguf").string());
  EXPECT_EQ(model->config.bos_id, 5);
  EXPECT_EQ(model->config.eos_id, 7);
  ASSERT_TRUE(model->vocab.has_value());
  const EmbeddedVocab& v = *model->vocab;
  EXPECT_EQ(v.model, "llama");
  EXPECT_EQ(v.pieces, tiny_pieces(c.vocab_size));
  ASSERT_EQ(v.scores.size(), size_t(c.vocab_size));
  ASSERT_EQ(v.types.size(), size_t(c.vocab_size));
  for (int i = 0; i < c.vocab_size; ++i) {
    EXPECT_EQ(v.scores[i], -float(i));
    EXPECT_EQ(v.types[i], i == 0 ? 2 : i < 3 ? 3 : 1);
  }
  EXPECT_EQ(v.unk_id, 0);
  EXPECT_FALSE(v.add_space_prefix);
}

TEST(LoaderGguf, NoVocabularyAndDefaults) {
  const auto dir = temp_dir("gguf-defaults");
  ModelConfig c = tiny_config();
  c.n_kv_heads = c.n_heads;  // head_count_kv absent means no GQA
  const auto m = random_arrays(c, 13, false);
  auto w = llama_gguf(m, {DType::F32, false});
  for (const char* key : {"llama.attention.head_count_kv", "llama.rope.freq_base", "llama.attention.layer_norm_rms_epsilon",
                          "llama.rope.dimension_count"})
    w.remove(key);
  w.write(dir / "defaults.gguf");
  auto model = load_gguf((dir / "defaults.gguf").string());
  EXPECT_FALSE(model->vocab.has_value());
  expect_config(model->config, c);  // tiny_config has the defaults: theta 10000, eps 1e-5, BOS 1, EOS 2
  expect_weights(*model, m, DType::F32, DType::F32);
}

TEST(LoaderGguf, VersionTwoAndEveryMetadataType) {
  const auto dir = temp_dir("gguf-types");
  const auto m = random_arrays(gguf_config(), 14, false);
  auto w = llama_gguf(m);
  w.version = 2;
  w.set_scalar<uint8_t>("x.u8", kGgufU8, 1);
  w.set_scalar<int8_t>("x.i8", kGgufI8, -1);
  w.set_scalar<uint16_t>("x.u16", kGgufU16, 2);
  w.set_scalar<int16_t>("x.i16", kGgufI16, -2);
  w.set_scalar<uint64_t>("x.u64", kGgufU64, ~0ull);
  w.set_scalar<int64_t>("x.i64", kGgufI64, -3);
  w.set_scalar<double>("x.f64", kGgufF64, 2.5);
  w.set_array<uint16_t>("x.array_u16", kGgufU16, {1, 2, 3});
  w.set_strings("x.empty_strings", {});
  // An array of arrays: [[1, 2], ["a"]].
  Bytes nested;
  nested.put<uint32_t>(kGgufArray);
  nested.put<uint64_t>(2);
  nested.put<uint32_t>(kGgufU8);
  nested.put<uint64_t>(2);
  nested.put<uint8_t>(1);
  nested.put<uint8_t>(2);
  nested.put<uint32_t>(kGgufString);
  nested.put<uint64_t>(1);
  nested.put_string("a");
  w.set_raw("x.nested", kGgufArray, nested.v);
  // A u32 context length written as u64 and the freq base as f64 still read.
  w.set_scalar<uint64_t>("llama.context_length", kGgufU64, 64);
  w.set_scalar<double>("llama.rope.freq_base", kGgufF64, 500000.0);
  w.write(dir / "types.gguf");
  auto model = load_gguf((dir / "types.gguf").string());
  expect_config(model->config, m.config);
  expect_weights(*model, m, DType::F32, DType::F32);
}

TEST(LoaderGguf, LargerAlignment) {
  const auto dir = temp_dir("gguf-align");
  const auto m = random_arrays(gguf_config(), 15, true);
  auto w = llama_gguf(m, {DType::BF16, true});
  w.alignment = 64;
  w.set_u32("general.alignment", 64);
  w.write(dir / "align64.gguf");
  expect_weights(*load_gguf((dir / "align64.gguf").string()), m, DType::BF16, DType::F32);
  w.set_u32("general.alignment", 3);
  w.write(dir / "align3.gguf");
  expect_load_error(dir / "align3.gguf", "alignment");
}

TEST(LoaderGguf, TruncatedAtSeveralPoints) {
  const auto dir = temp_dir("gguf-trunc");
  const auto w = llama_gguf(random_arrays(gguf_config(), 16, true));
  GgufWriter::Layout at;
  const auto bytes = w.build(&at);
  const fs::path path = dir / "cut.gguf";
  write_file(path, bytes);
  ASSERT_NO_THROW(load_gguf(path.string()));
  const std::vector<size_t> cuts = {4, 6, 8, 15, 20, at.metadata + 3, at.metadata + 9, at.metadata + 40,
                                    (at.metadata + at.tensor_infos) / 2, at.tensor_infos + 5, at.tensor_infos + 30,
                                    (at.tensor_infos + at.data) / 2, at.data - 1, at.data + 1, (at.data + at.size) / 2,
                                    at.size - 1};
  for (size_t cut : cuts) {
    SCOPED_TRACE("cut at " + std::to_string(cut) + " of " + std::to_string(at.size));
    write_file(path, prefix(bytes, cut));
    expect_error([&] { load_gguf(path.string()); }, path.string());
  }
}

TEST(LoaderGguf, BadMagicAndVersion) {
  const auto dir = temp_dir("gguf-magic");
  const auto bytes = llama_gguf(random_arrays(gguf_config(), 17, false)).build();
  const fs::path path = dir / "bad.gguf";
  auto b = bytes;
  b[3] = 'X';
  write_file(path, b);
  expect_error([&] { load_gguf(path.string()); }, path.string(), "magic");
  for (uint32_t version : {0u, 1u, 4u, 0xffffffffu}) {
    b = bytes;
    poke<uint32_t>(b, 4, version);
    write_file(path, b);
    expect_error([&] { load_gguf(path.string()); }, path.string(), "version");
  }
  b = bytes;
  poke<uint32_t>(b, 4, 0x03000000u);
  write_file(path, b);
  expect_error([&] { load_gguf(path.string()); }, path.string(), "big-endian");
}

TEST(LoaderGguf, AbsurdCounts) {
  const auto dir = temp_dir("gguf-counts");
  const auto m = random_arrays(gguf_config(), 18, false);
  const fs::path path = dir / "absurd.gguf";
  {
    auto w = llama_gguf(m);
    w.tensor_count_override = uint64_t(1) << 60;
    w.write(path);
    expect_error([&] { load_gguf(path.string()); }, path.string(), "tensor count");
  }
  {
    auto w = llama_gguf(m);
    w.kv_count_override = ~uint64_t(0);
    w.write(path);
    expect_error([&] { load_gguf(path.string()); }, path.string(), "metadata count");
  }
  {
    // A key whose length is 2^62.
    Bytes b;
    b.v = {'G', 'G', 'U', 'F'};
    b.put<uint32_t>(3);
    b.put<uint64_t>(0);
    b.put<uint64_t>(1);
    b.put<uint64_t>(uint64_t(1) << 62);
    b.append(std::vector<uint8_t>(64, 'k'));
    write_file(path, b.v);
    expect_error([&] { load_gguf(path.string()); }, path.string(), "length");
  }
  auto with_value = [&](uint32_t type, const std::vector<uint8_t>& value) {
    auto w = llama_gguf(m);
    w.set_raw("general.name", type, value);
    w.write(path);
  };
  Bytes v;
  v.put<uint64_t>(uint64_t(1) << 62);  // a string value of length 2^62
  with_value(kGgufString, v.v);
  expect_error([&] { load_gguf(path.string()); }, path.string(), "length");
  for (uint32_t elem : {uint32_t(kGgufU32), uint32_t(kGgufString), uint32_t(kGgufArray)}) {
    Bytes a;  // an array of 2^60 elements
    a.put<uint32_t>(elem);
    a.put<uint64_t>(uint64_t(1) << 60);
    with_value(kGgufArray, a.v);
    expect_error([&] { load_gguf(path.string()); }, path.string(), "cannot fit");
  }
  Bytes deep;  // arrays nested 200 deep
  for (int i = 0; i < 200; ++i) {
    deep.put<uint32_t>(kGgufArray);
    deep.put<uint64_t>(1);
  }
  with_value(kGgufArray, deep.v);
  expect_error([&] { load_gguf(path.string()); }, path.string(), "nested");
  with_value(99, {1, 2, 3, 4});
  expect_error([&] { load_gguf(path.string()); }, path.string(), "unknown value type");
  {
    auto w = llama_gguf(m);
    w.tensor("blk.0.attn_v.weight")->dims = {16, 8, 1, 1, 1};
    w.write(path);
    expect_error([&] { load_gguf(path.string()); }, path.string(), "dimensions");
  }
}

TEST(LoaderGguf, UnsupportedTensorType) {
  // Every type core/model/quant.h knows loads (tests/model/test_quantized_models.cpp); others are one line.
  const auto dir = temp_dir("gguf-qtype");
  auto w = llama_gguf(random_arrays(gguf_config(), 19, false));
  w.tensor("blk.1.attn_q.weight")->type = 16;  // IQ2_XXS
  w.write(dir / "iq2.gguf");
  expect_load_error(dir / "iq2.gguf", "tensor blk.1.attn_q.weight has type IQ2_XXS (16), which this reader does not support");
}

TEST(LoaderGguf, ShapeMismatch) {
  const auto dir = temp_dir("gguf-shape");
  const auto m = random_arrays(gguf_config(), 20, false);
  {
    auto w = llama_gguf(m);
    auto* t = w.tensor("blk.0.ffn_up.weight");
    std::swap(t->dims[0], t->dims[1]);  // same bytes, transposed shape
    w.write(dir / "swapped.gguf");
    expect_load_error(dir / "swapped.gguf", "blk.0.ffn_up.weight");
  }
  {
    auto w = llama_gguf(m);
    w.set_u32("llama.feed_forward_length", 48);
    w.write(dir / "hidden.gguf");
    expect_load_error(dir / "hidden.gguf", "expected");
  }
  {
    auto w = llama_gguf(m);
    w.set_u32("llama.attention.head_count", 3);  // 16 is not a multiple of 3
    w.write(dir / "heads.gguf");
    expect_load_error(dir / "heads.gguf", "multiple");
  }
  {
    auto w = llama_gguf(m);
    w.set_string("llama.embedding_length", "sixteen");
    w.write(dir / "type.gguf");
    expect_load_error(dir / "type.gguf", "llama.embedding_length");
  }
}

TEST(LoaderGguf, MissingDuplicateAndForeignTensors) {
  const auto dir = temp_dir("gguf-tensors");
  const auto m = random_arrays(gguf_config(), 21, false);
  {
    auto w = llama_gguf(m);
    w.remove_tensor("blk.1.ffn_down.weight");
    w.write(dir / "missing.gguf");
    expect_load_error(dir / "missing.gguf", "missing tensor blk.1.ffn_down.weight");
  }
  {
    auto w = llama_gguf(m);
    w.add_tensor("blk.0.attn_norm.weight", {16}, kGgmlF32, std::vector<uint8_t>(64));
    w.write(dir / "duplicate.gguf");
    expect_load_error(dir / "duplicate.gguf", "duplicate tensor blk.0.attn_norm.weight");
  }
  {
    auto w = llama_gguf(m);
    w.add_tensor("blk.7.attn_norm.weight", {16}, kGgmlF32, std::vector<uint8_t>(64));
    w.write(dir / "extra-layer.gguf");
    expect_load_error(dir / "extra-layer.gguf", "block_count");
  }
  {
    auto w = llama_gguf(m);
    w.append_raw("general.architecture", kGgufString, {1, 0, 0, 0, 0, 0, 0, 0, 'x'});
    w.write(dir / "dupkey.gguf");
    expect_load_error(dir / "dupkey.gguf", "duplicate metadata key general.architecture");
  }
  {
    auto w = llama_gguf(m);
    w.set_string("general.architecture", "gpt2");
    w.write(dir / "gpt2.gguf");
    expect_load_error(dir / "gpt2.gguf", "gpt2");
    w.remove("general.architecture");
    w.write(dir / "noarch.gguf");
    expect_load_error(dir / "noarch.gguf", "general.architecture");
  }
}

TEST(LoaderGguf, OffsetsOutsideTheData) {
  const auto dir = temp_dir("gguf-offsets");
  const auto m = random_arrays(gguf_config(), 22, false);
  {
    auto w = llama_gguf(m);
    w.tensor("output_norm.weight")->offset = uint64_t(1) << 40;
    w.write(dir / "far.gguf");
    expect_load_error(dir / "far.gguf", "output_norm.weight");
  }
  {
    auto w = llama_gguf(m);
    w.tensor("output_norm.weight")->offset = ~uint64_t(0) - 31;  // offset + size wraps around 2^64
    w.write(dir / "wrap.gguf");
    expect_load_error(dir / "wrap.gguf", "output_norm.weight");
  }
  {
    auto w = llama_gguf(m);
    w.tensor("blk.0.attn_norm.weight")->offset = 4;
    w.write(dir / "misaligned.gguf");
    expect_load_error(dir / "misaligned.gguf", "alignment");
  }
}

// Every tensor's bytes follow from its type and shape: a type field changed
// in the header (the data left as it was) and two tensors at one offset are
// refused, naming the tensor, as llama.cpp's loader refuses them.
TEST(LoaderGguf, LayoutRefusesRetypedAndOverlappingTensors) {
  const auto dir = temp_dir("gguf-layout");
  ModelConfig c = gguf_config();
  c.dim = 32;  // one Q4_0 / Q8_0 block per row
  c.hidden_dim = 64;
  const auto m = random_arrays(c, 23, false);
  llama_gguf(m, {DType::Q4_0}).write(dir / "q4_0.gguf");
  EXPECT_EQ(load_model((dir / "q4_0.gguf").string())->weights.layers[0].wq.dtype, DType::Q4_0);  // the control
  {
    auto w = llama_gguf(m, {DType::Q4_0});
    w.tensor("blk.0.attn_q.weight")->type = uint32_t(DType::Q8_0);  // 34 bytes a block where 18 were written
    w.write(dir / "retyped.gguf");
    expect_load_error(dir / "retyped.gguf", "blk.0.attn_q.weight and ");
    expect_load_error(dir / "retyped.gguf", "overlap");
  }
  {
    auto w = llama_gguf(m, {DType::Q4_0});
    w.tensor("blk.0.attn_k.weight")->offset = 0;  // where token_embd.weight, the first tensor, is
    w.write(dir / "same-offset.gguf");
    expect_load_error(dir / "same-offset.gguf", "blk.0.attn_k.weight");
    expect_load_error(dir / "same-offset.gguf", "token_embd.weight");
  }
  // The same byte size under another type (Q4_K super-blocks read as Q4_0
  // blocks): the scales, half floats in the data, are not all finite.
  c.dim = c.hidden_dim = 256;
  const auto k = random_arrays(c, 24, false);
  auto w = llama_gguf(k, {DType::Q4_K});
  w.write(dir / "q4_k.gguf");
  EXPECT_EQ(load_model((dir / "q4_k.gguf").string())->weights.layers[0].wq.dtype, DType::Q4_K);
  w.tensor("blk.0.attn_q.weight")->type = uint32_t(DType::Q4_0);
  w.write(dir / "q4_k-as-q4_0.gguf");
  expect_load_error(dir / "q4_k-as-q4_0.gguf", "tensor blk.0.attn_q.weight (Q4_0): block ");
  expect_load_error(dir / "q4_k-as-q4_0.gguf", "NaN or infinite scale");
}

TEST(LoaderGguf, VocabularyInconsistencies) {
  const auto dir = temp_dir("gguf-badvocab");
  const auto m = random_arrays(gguf_config(), 23, false);
  {
    auto w = llama_gguf(m);
    w.set_array<float>("tokenizer.ggml.scores", kGgufF32, {1.0f, 2.0f});
    w.write(dir / "scores.gguf");
    expect_load_error(dir / "scores.gguf", "tokenizer.ggml.scores");
  }
  {
    auto w = llama_gguf(m);
    w.set_strings("tokenizer.ggml.tokens", tiny_pieces(40));  // more pieces than embedding rows
    w.write(dir / "tokens.gguf");
    expect_load_error(dir / "tokens.gguf", "tokenizer.ggml.tokens");
  }
  {
    auto w = llama_gguf(m);
    w.set_array<int32_t>("tokenizer.ggml.scores", kGgufI32, std::vector<int32_t>(32));
    w.write(dir / "scoretype.gguf");
    expect_load_error(dir / "scoretype.gguf", "tokenizer.ggml.scores");
  }
  {
    auto w = llama_gguf(m);
    w.set_u32("tokenizer.ggml.eos_token_id", 32);
    w.write(dir / "eos.gguf");
    expect_load_error(dir / "eos.gguf", "BOS/EOS");
  }
}

// ---- safetensors -------------------------------------------------------------

ModelConfig hf_test_config() {
  ModelConfig c = tiny_config();
  c.rope_theta = 500000.0f;
  c.norm_eps = 1e-6f;
  return c;
}

TEST(LoaderSafetensors, SingleFileEachDtype) {
  const auto base = temp_dir("st-single");
  const auto m = random_arrays(hf_test_config(), 30, /*separate_classifier=*/true);
  for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const fs::path dir = base / dtype_name(dtype);
    write_hf_model(dir, m, {dtype, 0});
    // The folder, its config.json and its model.safetensors all name the model.
    for (const fs::path& path : {dir, dir / "config.json", dir / "model.safetensors"}) {
      auto model = load_model(path.string());
      EXPECT_EQ(model->format, "safetensors");
      EXPECT_EQ(model->path, path.string());
      expect_config(model->config, m.config);
      expect_weights(*model, m, dtype, dtype);  // q/k compared in our order: un-permuted by the loader
    }
  }
}

TEST(LoaderSafetensors, ShardedWithIndex) {
  const auto base = temp_dir("st-sharded");
  const auto m = random_arrays(hf_test_config(), 31, /*separate_classifier=*/false);
  for (DType dtype : {DType::BF16, DType::F32}) {
    const fs::path dir = base / dtype_name(dtype);
    write_hf_model(dir, m, {dtype, 3});
    ASSERT_TRUE(fs::exists(dir / "model-00003-of-00003.safetensors"));
    for (const fs::path& path : {dir, dir / "model.safetensors.index.json", dir / "config.json"}) {
      auto model = load_model(path.string());
      expect_config(model->config, m.config);
      expect_weights(*model, m, dtype, dtype);
      EXPECT_TRUE(model->shared_classifier());
    }
  }
}

TEST(LoaderSafetensors, UnpermutesQueryAndKeyRows) {
  // Hugging Face row r of q_proj holds the value r: after loading, our row
  // 2i of each head must come from HF row i and row 2i+1 from HF row i + hd/2.
  const auto dir = temp_dir("st-permute");
  auto m = random_arrays(hf_test_config(), 32, false);
  write_hf_model(dir, m);
  auto tensors = hf_tensors(m, DType::F32);
  const ModelConfig& c = m.config;
  const int hd = c.head_dim();
  for (auto& t : tensors)
    if (t.name == "model.layers.0.self_attn.q_proj.weight") {
      std::vector<float> rows(size_t(c.n_heads) * hd * c.dim);
      for (size_t i = 0; i < rows.size(); ++i) rows[i] = float(i / size_t(c.dim));
      t.data = encode(rows, DType::F32);
    }
  write_safetensors(dir / "model.safetensors", tensors);
  auto model = load_safetensors(dir.string());
  const auto q = tensor_values(model->weights.layers[0].wq);
  for (int h = 0; h < c.n_heads; ++h)
    for (int i = 0; i < hd / 2; ++i) {
      EXPECT_EQ(q[size_t(h * hd + 2 * i) * c.dim], float(h * hd + i));
      EXPECT_EQ(q[size_t(h * hd + 2 * i + 1) * c.dim + 3], float(h * hd + i + hd / 2));
    }
  // The permuted copies belong to the model; everything else is a view of the mapping.
  EXPECT_GE(model->owned.size(), 1u + 2u * size_t(c.n_layers));
  for (const auto& l : model->weights.layers) {
    EXPECT_FALSE(in_mapping(*model, l.wq));
    EXPECT_FALSE(in_mapping(*model, l.wk));
    for (const Tensor* t : {&l.attn_norm, &l.wv, &l.wo, &l.ffn_norm, &l.w1, &l.w2, &l.w3}) EXPECT_TRUE(in_mapping(*model, *t));
  }
  EXPECT_TRUE(in_mapping(*model, model->weights.token_embedding));
}

TEST(LoaderSafetensors, Qwen2BiasesAndRopeScaling) {
  const auto dir = temp_dir("st-qwen2");
  ModelConfig c = hf_test_config();
  c.architecture = "qwen2";
  c.attention_bias = true;
  c.rope_theta = 1e6f;
  c.rope_scaling = {"llama3", 8.0f, 1.0f, 4.0f, 32, {}};
  const auto m = random_arrays(c, 38, false);
  write_hf_model(dir, m);
  auto model = load_safetensors(dir.string());
  EXPECT_EQ(model->config.architecture, "qwen2");
  EXPECT_TRUE(model->config.attention_bias);
  EXPECT_EQ(model->config.rope_scaling.type, "llama3");
  EXPECT_EQ(model->config.rope_scaling.original_context, 32);
  EXPECT_FLOAT_EQ(model->config.rope_scaling.factor, 8.0f);
  // Biases come back in our interleaved order, q and k unpermuted like their weights.
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& w = model->weights.layers[size_t(l)];
    EXPECT_EQ(tensor_values(w.bq), m.layers[size_t(l)].bq);
    EXPECT_EQ(tensor_values(w.bk), m.layers[size_t(l)].bk);
    EXPECT_EQ(tensor_values(w.bv), m.layers[size_t(l)].bv);
    EXPECT_EQ(tensor_values(w.wq), m.layers[size_t(l)].wq);
  }
  EXPECT_EQ(model->weights.layers[0].bq.rows, 1);
  EXPECT_EQ(model->weights.layers[0].bq.cols, c.dim);
}

TEST(LoaderSafetensors, ClassifierTyingAndTokenIds) {
  const auto dir = temp_dir("st-tie");
  const auto m = random_arrays(hf_test_config(), 33, /*separate_classifier=*/true);
  write_hf_model(dir, m);
  auto config = hf_config(m.config, /*tie=*/true);  // tied although lm_head.weight is present
  config["eos_token_id"] = {2, 9};
  config["bos_token_id"] = nullptr;
  config.erase("rope_theta");
  config.erase("rms_norm_eps");
  config.erase("num_key_value_heads");
  config["num_key_value_heads"] = 2;
  const std::string text = config.dump();
  write_file(dir / "config.json", std::vector<uint8_t>(text.begin(), text.end()));
  auto model = load_safetensors(dir.string());
  EXPECT_TRUE(model->shared_classifier());
  EXPECT_EQ(model->config.eos_id, 2);
  EXPECT_EQ(model->config.bos_id, 1);
  EXPECT_FLOAT_EQ(model->config.rope_theta, 10000.0f);
  EXPECT_FLOAT_EQ(model->config.norm_eps, 1e-6f);
}

TEST(LoaderSafetensors, MisalignedDataIsCopied) {
  const auto dir = temp_dir("st-misaligned");
  const auto m = random_arrays(hf_test_config(), 34, true);
  write_hf_model(dir, m);
  const auto tensors = hf_tensors(m, DType::F32);
  std::string header = st_header(tensors).dump();
  while ((8 + header.size()) % 4 != 1) header.push_back(' ');  // data starts at an odd byte
  write_file(dir / "model.safetensors", st_file(header, tensors, /*pad=*/false));
  auto model = load_safetensors(dir.string());
  expect_weights(*model, m, DType::F32, DType::F32);
}

// A model folder whose model.safetensors header has been changed by `edit`.
fs::path hf_with_header(const std::string& name, const ModelArrays& m, const std::function<void(json&)>& edit,
                        std::vector<StTensor>* tensors_out = nullptr) {
  const auto dir = temp_dir(name);
  write_hf_model(dir, m);
  auto tensors = hf_tensors(m, DType::F32);
  json header = st_header(tensors);
  edit(header);
  write_file(dir / "model.safetensors", st_file(header.dump(), tensors));
  if (tensors_out) *tensors_out = tensors;
  return dir;
}

TEST(LoaderSafetensors, BrokenHeaders) {
  const auto m = random_arrays(hf_test_config(), 35, false);
  const std::string q = "model.layers.0.self_attn.q_proj.weight", v = "model.layers.1.self_attn.v_proj.weight";
  struct Case {
    const char* name;
    std::function<void(json&)> edit;
    std::string fragment;
  };
  const std::vector<Case> cases = {
      {"dtype-i8", [&](json& h) { h[q]["dtype"] = "I8"; h[q]["shape"] = {64, 16}; }, "dtype I8"},
      {"dtype-unknown", [&](json& h) { h[q]["dtype"] = "F7"; }, "unknown dtype F7"},
      {"dtype-number", [&](json& h) { h[q]["dtype"] = 32; }, "dtype"},
      {"shape", [&](json& h) { h[v]["shape"] = {16, 8}; }, "has shape [16, 8], expected [8, 16]"},
      {"shape-negative", [&](json& h) { h[v]["shape"] = {-8, 16}; }, "shape"},
      {"size", [&](json& h) { h[v]["data_offsets"][1] = h[v]["data_offsets"][1].get<uint64_t>() - 4; }, "bytes"},
      {"past-end", [&](json& h) { h[v]["data_offsets"] = {0, uint64_t(1) << 40}; }, "past the end"},
      {"begin-after-end", [&](json& h) { h[v]["data_offsets"] = {64, 0}; }, "begin"},
      {"offsets-shape", [&](json& h) { h[v]["data_offsets"] = {0}; }, "data_offsets"},
      {"missing", [&](json& h) { h.erase("model.layers.1.mlp.up_proj.weight"); }, "missing tensor model.layers.1.mlp.up_proj.weight"},
      {"not-object", [&](json& h) { h = json::array({1, 2}); }, "object"},
      {"entry-not-object", [&](json& h) { h[v] = "hello"; }, v},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto dir = hf_with_header(std::string("st-broken-") + c.name, m, c.edit);
    const std::string file = (dir / "model.safetensors").string();
    expect_error([&] { load_safetensors(dir.string()); }, file, c.fragment);
  }
}

// A header's entries are read in one pass: 200,000 tensors the model does not
// use (all on the same 4 bytes) load beside its own; with a parser that
// rescanned an object's members at each member's end they took minutes.
TEST(LoaderSafetensors, TwoHundredThousandExtraEntriesLoad) {
  const auto m = random_arrays(hf_test_config(), 37, false);
  const auto dir = hf_with_header("st-many", m, [](json& h) {
    for (int i = 0; i < 200000; ++i)
      h["extra." + std::to_string(i)] = {{"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {0, 4}}};
  });
  auto model = load_safetensors(dir.string());
  expect_config(model->config, m.config);
}

// A header longer than the format allows is refused before it is parsed,
// though the (sparse) file is long enough to hold it.
TEST(LoaderSafetensors, AHeaderOverTheFormatsBoundIsRefused) {
  const auto dir = hf_with_header("st-long-header", random_arrays(hf_test_config(), 38, false), [](json&) {});
  const fs::path file = dir / "model.safetensors";
  auto bytes = read_file(file);
  poke<uint64_t>(bytes, 0, uint64_t(100'000'001));
  write_file(file, bytes);
  fs::resize_file(file, 101'000'000);
  expect_error([&] { load_safetensors(file.string()); }, file.string(), "over the format's bound of 100000000 bytes");
}

TEST(LoaderSafetensors, TruncatedAndBadJson) {
  const auto dir = temp_dir("st-trunc");
  const auto m = random_arrays(hf_test_config(), 36, false);
  write_hf_model(dir, m);
  const fs::path file = dir / "model.safetensors";
  const auto bytes = read_file(file);
  uint64_t header_len;
  std::memcpy(&header_len, bytes.data(), 8);
  for (size_t cut : {size_t(0), size_t(5), size_t(8), size_t(8 + header_len / 2), size_t(8 + header_len + 10),
                     bytes.size() / 2, bytes.size() - 1}) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    write_file(file, prefix(bytes, cut));
    expect_error([&] { load_safetensors(file.string()); }, file.string());
  }
  auto b = bytes;
  poke<uint64_t>(b, 0, uint64_t(1) << 62);
  write_file(file, b);
  expect_error([&] { load_safetensors(file.string()); }, file.string(), "header length");
  write_file(file, st_file("{\"model.norm.weight\": {\"dtype\": \"F32\",\n \"shape\": [16", {}));
  expect_error([&] { load_safetensors(file.string()); }, file.string(), "invalid JSON");
}

TEST(LoaderSafetensors, BadConfig) {
  const auto dir = temp_dir("st-config");
  const auto m = random_arrays(hf_test_config(), 37, false);
  write_hf_model(dir, m);
  const fs::path config = dir / "config.json";
  auto write_config = [&](const std::string& text) { write_file(config, std::vector<uint8_t>(text.begin(), text.end())); };
  auto edited = [&](const std::function<void(json&)>& edit) {
    json j = hf_config(m.config, true);
    edit(j);
    write_config(j.dump());
  };
  write_config("{\"hidden_size\": 16,\n\n oops");
  expect_error([&] { load_safetensors(dir.string()); }, config.string(), "invalid JSON");
  write_config("");
  expect_error([&] { load_safetensors(dir.string()); }, config.string(), "invalid JSON");
  write_config("[1, 2]");
  expect_error([&] { load_safetensors(dir.string()); }, config.string(), "object");
  edited([](json& j) { j.erase("hidden_size"); });
  expect_error([&] { load_safetensors(dir.string()); }, config.string(), "hidden_size");
  edited([](json& j) { j["num_hidden_layers"] = "two"; });
  expect_error([&] { load_safetensors(dir.string()); }, config.string(), "num_hidden_layers");
  edited([](json& j) { j["vocab_size"] = uint64_t(1) << 40; });
  expect_error([&] { load_safetensors(dir.string()); }, config.string(), "vocab_size");
  edited([](json& j) { j["intermediate_size"] = 48; });  // disagrees with the tensors
  expect_error([&] { load_safetensors(dir.string()); }, (dir / "model.safetensors").string(), "expected");
  edited([](json& j) { j["model_type"] = "gpt2"; });
  expect_error([&] { load_safetensors(dir.string()); }, config.string(), "gpt2");
  // linear and llama3 scaling are read (LoaderSafetensors.Qwen2BiasesAndRopeScaling); others are one line.
  edited([](json& j) { j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 2.0}}; });
  expect_error([&] { load_safetensors(dir.string()); }, config.string(), "rope_scaling type 'yarn'");
  edited([](json& j) { j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}}; });
  expect_error([&] { load_safetensors(dir.string()); }, config.string(), "original_max_position_embeddings");
  edited([](json& j) { j["attention_bias"] = true; });  // a llama model: o_proj would be biased too
  expect_error([&] { load_safetensors(dir.string()); }, config.string(), "attention_bias");
  fs::remove(config);
  expect_error([&] { load_safetensors(dir.string()); }, dir.string(), "config.json");
}

TEST(LoaderSafetensors, BrokenIndex) {
  const auto dir = temp_dir("st-index");
  const auto m = random_arrays(hf_test_config(), 38, false);
  write_hf_model(dir, m, {DType::F16, 2});
  const fs::path index = dir / "model.safetensors.index.json";
  const auto original = read_file(index);
  auto edit = [&](const std::function<void(json&)>& f) {
    json j = json::parse(original.begin(), original.end());
    f(j);
    const std::string text = j.dump();
    write_file(index, std::vector<uint8_t>(text.begin(), text.end()));
  };
  edit([](json& j) { j["weight_map"]["model.norm.weight"] = "model-00009-of-00009.safetensors"; });
  expect_error([&] { load_safetensors(dir.string()); }, "model-00009-of-00009.safetensors", "cannot open");
  edit([](json& j) { j["weight_map"]["model.norm.weight"] = "../elsewhere.safetensors"; });
  expect_error([&] { load_safetensors(dir.string()); }, index.string(), "leaves the model folder");
  edit([](json& j) { j["weight_map"]["model.norm.weight"] = "model-00001-of-00002.safetensors"; });
  expect_error([&] { load_safetensors(dir.string()); }, "model-00001-of-00002.safetensors", "model.norm.weight");
  edit([](json& j) { j["weight_map"].erase("model.norm.weight"); });
  expect_error([&] { load_safetensors(dir.string()); }, index.string(), "missing tensor model.norm.weight");
  edit([](json& j) { j.erase("weight_map"); });
  expect_error([&] { load_safetensors(dir.string()); }, index.string(), "weight_map");
  write_file(index, {'{'});
  expect_error([&] { load_safetensors(dir.string()); }, index.string(), "invalid JSON");
}

// ---- random corruption -----------------------------------------------------------

// Flips random bytes (mostly in the headers, where parsing decisions are made)
// and checks every outcome is a clean load or an h2o::Error.
void fuzz(const fs::path& path, const std::vector<uint8_t>& good, size_t header_bytes, uint64_t seed, int rounds) {
  std::mt19937_64 rng(seed);
  for (int r = 0; r < rounds; ++r) {
    auto b = good;
    const int flips = 1 + int(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      const size_t at = (rng() % 4 != 0) ? rng() % std::min(header_bytes, b.size()) : rng() % b.size();
      b[at] = (rng() % 2) ? uint8_t(rng()) : uint8_t(b[at] ^ (1u << (rng() % 8)));
    }
    if (rng() % 8 == 0) b.resize(rng() % b.size());
    write_file(path, b);
    SCOPED_TRACE("round " + std::to_string(r));
    expect_no_crash(path);
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(LoaderFuzz, RandomCorruptionNeverCrashes) {
  const auto dir = temp_dir("fuzz");
  const auto m = random_arrays(tiny_config(), 40, true);
  {
    GgufWriter::Layout at;
    const auto bytes = llama_gguf(m, {DType::F16, true}).build(&at);
    fuzz(dir / "f.gguf", bytes, at.data, 1, 300);
  }
  {
    const auto bytes = llama2c_bytes(m);
    fuzz(dir / "f.bin", bytes, 28, 2, 100);
  }
  {
    const auto tensors = hf_tensors(m, DType::BF16);
    const auto bytes = st_file(st_header(tensors).dump(), tensors);
    write_hf_model(dir / "hf", m);
    uint64_t header_len;
    std::memcpy(&header_len, bytes.data(), 8);
    fuzz(dir / "hf" / "model.safetensors", bytes, 8 + header_len, 3, 200);
  }
}

TEST(LoaderFuzz, EveryGgufHeaderPrefixFails) {
  const auto dir = temp_dir("fuzz-prefix");
  GgufWriter::Layout at;
  const auto bytes = llama_gguf(random_arrays(tiny_config(), 41, false)).build(&at);
  const fs::path path = dir / "p.gguf";
  for (size_t cut = 0; cut < at.data; cut += 7) {
    write_file(path, prefix(bytes, cut));
    SCOPED_TRACE("cut " + std::to_string(cut));
    expect_error([&] { load_model(path.string()); }, path.string());
    if (::testing::Test::HasFailure()) return;
  }
}

// ---- synthetic models --------------------------------------------------------

bool same_weights(const Model& a, const Model& b) {
  const auto ta = a.all_tensors(), tb = b.all_tensors();
  if (ta.size() != tb.size()) return false;
  for (size_t i = 0; i < ta.size(); ++i) {
    if (ta[i]->bytes() != tb[i]->bytes() || ta[i]->dtype != tb[i]->dtype) return false;
    if (std::memcmp(ta[i]->data, tb[i]->data, size_t(ta[i]->bytes())) != 0) return false;
  }
  return true;
}

TEST(Synthetic, SameSeedSameWeightsDifferentSeedDifferent) {
  auto a = make_synthetic({"stories260K", 7, DType::F32, 0, 0});
  auto b = make_synthetic({"stories260K", 7, DType::F32, 0, 0});
  auto c = make_synthetic({"stories260K", 8, DType::F32, 0, 0});
  EXPECT_TRUE(same_weights(*a, *b));
  EXPECT_FALSE(same_weights(*a, *c));
  // Different tensors differ too (each has its own stream).
  EXPECT_NE(tensor_values(a->weights.layers[0].wq), tensor_values(a->weights.layers[1].wq));
  EXPECT_EQ(a->format, "synthetic");
  EXPECT_EQ(a->path, "synthetic:stories260K");
}

TEST(Synthetic, Stories15MParameterCount) {
  auto model = make_synthetic({"stories15M", 1, DType::F32, 0, 0});
  const ModelConfig& c = model->config;
  // llama2.c's stories15M: 6 layers of 288, vocabulary 32000, tied classifier.
  EXPECT_EQ(c.parameter_count(), 15191712);
  EXPECT_TRUE(model->shared_classifier());
  int64_t numel = 0;
  for (const Tensor* t : model->all_tensors()) numel += t->numel();
  EXPECT_EQ(numel, c.parameter_count());
  EXPECT_EQ(model->weight_bytes(), numel * 4);
}

TEST(Synthetic, ShapesTable) {
  const auto names = synthetic_shape_names();
  ASSERT_EQ(names.size(), 14u);  // six Llama shapes, a test shape for the K-quants, two Qwen2, five Pythia
  for (const auto& name : names) {
    SCOPED_TRACE(name);
    EXPECT_NO_THROW(synthetic_shape(name).validate(name));
  }
  const ModelConfig t = synthetic_shape("tinyllama-1.1b");
  EXPECT_EQ(t.n_kv_heads, 4);
  EXPECT_EQ(t.group_size(), 8);
  const ModelConfig l = synthetic_shape("llama2-7b");
  EXPECT_EQ(l.dim, 4096);
  EXPECT_EQ(l.hidden_dim, 11008);
  // 6.74e9 with the untied classifier.
  EXPECT_NEAR(double(l.parameter_count() + int64_t(l.vocab_size) * l.dim), 6.738e9, 0.01e9);
  const ModelConfig s = synthetic_shape("stories260K");
  EXPECT_EQ(s.n_kv_heads, 4);
  const ModelConfig q = synthetic_shape("qwen2-0.5b");
  EXPECT_TRUE(q.attention_bias);
  EXPECT_EQ(q.architecture, "qwen2");
  // Qwen2-0.5B: 494M parameters, its classifier tied to the embedding.
  EXPECT_NEAR(double(q.parameter_count()), 0.494e9, 0.001e9);
  expect_error([] { synthetic_shape("gpt5"); }, "gpt5", "unknown synthetic shape");
}

TEST(Synthetic, DtypesAndOverrides) {
  auto f32 = make_synthetic({"stories260K", 9, DType::F32, 0, 0});
  for (DType dtype : {DType::F16, DType::BF16}) {
    auto half = make_synthetic({"stories260K", 9, dtype, 0, 0});
    EXPECT_EQ(half->weight_dtype(), dtype);
    EXPECT_EQ(half->weight_bytes() * 2, f32->weight_bytes());
    // The same random values, rounded to the narrower type.
    const auto fa = f32->all_tensors(), ha = half->all_tensors();
    ASSERT_EQ(fa.size(), ha.size());
    for (size_t i = 0; i < fa.size(); ++i) EXPECT_EQ(tensor_values(*ha[i]), rounded(tensor_values(*fa[i]), dtype));
  }
  auto big = make_synthetic({"stories260K", 9, DType::F32, 32000, 2048});
  EXPECT_EQ(big->config.vocab_size, 32000);
  EXPECT_EQ(big->config.max_seq_len, 2048);
  EXPECT_EQ(big->weights.classifier.rows, 32000);
  // Overriding the vocabulary leaves the layers as they were.
  EXPECT_EQ(tensor_values(big->weights.layers[2].w2), tensor_values(f32->weights.layers[2].w2));
}

TEST(Synthetic, ValuesAreScaledForStableActivations) {
  auto model = make_synthetic({"stories260K", 11, DType::F32, 0, 0});
  const ModelConfig& c = model->config;
  const auto w1 = tensor_values(model->weights.layers[0].w1);
  const float bound = std::sqrt(3.0f / float(c.dim));
  double sum_sq = 0;
  for (float v : w1) {
    EXPECT_LE(std::fabs(v), bound);
    sum_sq += double(v) * v;
  }
  // Variance 1/in: a projection keeps unit-variance activations at unit variance.
  EXPECT_NEAR(sum_sq / double(w1.size()) * c.dim, 1.0, 0.05);
  for (float v : tensor_values(model->weights.final_norm)) {
    EXPECT_GE(v, 0.9f);
    EXPECT_LE(v, 1.1f);
  }
}

TEST(Synthetic, ParsePath) {
  EXPECT_TRUE(is_synthetic_path("synthetic:stories15M"));
  EXPECT_FALSE(is_synthetic_path("stories15M.bin"));
  const auto spec = parse_synthetic_path("synthetic:tinyllama-1.1b:vocab=512:seed=99:dtype=bf16:ctx=128");
  EXPECT_EQ(spec.shape, "tinyllama-1.1b");
  EXPECT_EQ(spec.vocab_size, 512);
  EXPECT_EQ(spec.seed, 99u);
  EXPECT_EQ(spec.types.base, DType::BF16);
  EXPECT_EQ(spec.max_seq_len, 128);
  const auto plain = parse_synthetic_path("synthetic:stories260K");
  EXPECT_EQ(plain.vocab_size, 0);
  EXPECT_EQ(plain.types.base, DType::F32);
  for (const std::string bad : {"synthetic:", "synthetic:nope", "synthetic:stories15M:vocab=", "synthetic:stories15M:vocab=12x",
                                "synthetic:stories15M:vocab=0", "synthetic:stories15M:seed=-1", "synthetic:stories15M:dtype=q4",
                                "synthetic:stories15M:color=red", "synthetic:stories15M:seed",
                                "synthetic:stories15M:ctx=99999999999"}) {
    SCOPED_TRACE(bad);
    expect_error([&] { parse_synthetic_path(bad); }, bad);
  }
  expect_error([] { make_synthetic({"stories260K", 1, DType::F32, 2, 0}); }, "synthetic:stories260K", "BOS/EOS");
}

TEST(Synthetic, LoadModelWithSyntheticPath) {
  auto a = load_model("synthetic:stories260K:seed=5:dtype=f16");
  auto b = make_synthetic({"stories260K", 5, DType::F16, 0, 0});
  EXPECT_TRUE(same_weights(*a, *b));
  EXPECT_EQ(a->format, "synthetic");
}

// The app shows how far a synthetic model's weights are made and can stop them (a 7B takes minutes):
// every chunk is told once, the last call says done == total, and the weights are the same with a
// listener as without; a false answer stops the load with LoadCancelled, well before its end.
TEST(Synthetic, LoadReportsItsProgressAndStopsWhenTold) {
  std::mutex mutex;
  std::vector<int64_t> seen;
  int64_t total = 0;
  auto listened = load_model("synthetic:stories15M:seed=3", [&](int64_t done, int64_t all) {
    std::lock_guard lock(mutex);
    seen.push_back(done);
    total = all;
    return true;
  });
  ASSERT_GT(total, 1);
  ASSERT_EQ(int64_t(seen.size()), total) << "one call a chunk";
  std::sort(seen.begin(), seen.end());
  for (int64_t i = 0; i < total; ++i) ASSERT_EQ(seen[size_t(i)], i + 1) << "each count once, 1 to total";
  EXPECT_TRUE(same_weights(*listened, *load_model("synthetic:stories15M:seed=3")));

  std::atomic<int64_t> calls{0};
  try {
    load_model("synthetic:stories15M:seed=3", [&](int64_t, int64_t) { return ++calls < 3; });
    FAIL() << "a load told to stop went on to the end";
  } catch (const LoadCancelled& e) {
    EXPECT_NE(std::string(e.what()).find("synthetic:stories15M: loading was cancelled"), std::string::npos) << e.what();
  }
  // Each thread finishes the chunk it is on at most: far fewer calls than the whole load's.
  EXPECT_LE(calls.load(), 3 + hardware_threads()) << "of " << total;
  // A file's load makes no weights, so it says nothing (and loads as before).
  if (!have_asset("stories260K.bin")) return;
  bool called = false;
  load_model(asset("stories260K.bin"), [&](int64_t, int64_t) { return called = true; });
  EXPECT_FALSE(called);
}

}  // namespace

// ModelConfig::rope_frequencies against values computed by hand.
TEST(RopeFrequencies, PlainLinearAndLlama3) {
  ModelConfig c = synthetic_shape("stories260K");  // head_dim 8: pairs 0..3
  c.rope_theta = 10000.0f;
  std::vector<double> f = c.rope_frequencies();
  ASSERT_EQ(f.size(), 4u);
  EXPECT_DOUBLE_EQ(f[0], 1.0);
  EXPECT_DOUBLE_EQ(f[1], 0.1);     // 10000^(-2/8)
  EXPECT_DOUBLE_EQ(f[3], 0.001);   // 10000^(-6/8)
  c.rope_scaling.type = "linear";
  c.rope_scaling.factor = 4;
  EXPECT_DOUBLE_EQ(c.rope_frequencies()[1], 0.025);
  // llama3, original context 1000, factor 8, low 1, high 4: wavelengths 2*pi*{1, 10, 100, 1000};
  // below 250 kept, above 1000 divided by 8, 628.3 blended with smooth = (1000/628.3 - 1) / 3.
  c.rope_scaling = {"llama3", 8.0f, 1.0f, 4.0f, 1000, {}};
  f = c.rope_frequencies();
  EXPECT_DOUBLE_EQ(f[0], 1.0);
  EXPECT_DOUBLE_EQ(f[1], 0.1);
  const double smooth = (1000 / (2 * M_PI * 100) - 1) / 3;
  EXPECT_NEAR(f[2], (1 - smooth) * 0.01 / 8 + smooth * 0.01, 1e-15);
  EXPECT_NEAR(f[3], 0.001 / 8, 1e-18);
  // GGUF's rope_freqs: one divisor per pair.
  c.rope_scaling = RopeScaling{};
  c.rope_scaling.freq_factors = {1, 2, 4, 8};
  EXPECT_DOUBLE_EQ(c.rope_frequencies()[3], 0.001 / 8);
  c.rope_scaling.freq_factors = {1, 2};
  EXPECT_THROW(c.validate("config"), Error);
  c.rope_scaling = RopeScaling{};
  c.rope_scaling.type = "yarn";
  try {
    c.validate("config.json");
    FAIL() << "yarn accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "config.json: RoPE scaling 'yarn' is not supported (none, linear or llama3)");
  }
}

}  // namespace h2o::test
