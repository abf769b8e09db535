#pragma once
// Which type each weight tensor gets when a model is quantised (synthetic
// models, h2o-cli convert): one type for every matrix ("q8_0"), or a recipe
// like llama.cpp's "_M" mixes (Q4_K_M: most matrices Q4_K, the classifier
// and some layers' attn_v / ffn_down Q6_K). Norms and biases stay F32. A
// matrix whose rows are not whole blocks of its type falls back as llama.cpp
// does (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, ... and F16 when even 32
// does not divide the row).
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/dtype.h"

namespace h2o {

// What a tensor is, for choosing its type.
enum class TensorRole { Embedding, Classifier, AttnQ, AttnK, AttnV, AttnOut, FfnGate, FfnDown, FfnUp, Vector };

struct TypeMix {
  TypeMix(DType type = DType::F32) : name(dtype_name(type)), base(type), boosted(type) {}
  std::string name;          // as given: "f32", "q4_k", "q4_k_m", ...
  DType base = DType::F32;   // every matrix without a rule of its own
  DType boosted = DType::F32;  // _M recipes: the classifier, and attn_v / ffn_down of some layers
  bool medium = false;         // an _M recipe

  // The type of tensor `role` of layer `layer` (of `layers`) with rows of `cols` elements.
  DType type_for(TensorRole role, int layer, int layers, int64_t cols) const;
};

// "f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_k" ...
// "q6_k", or "q4_k_m" / "q5_k_m". Throws Error("<what>: ...") naming the choices.
TypeMix parse_type_mix(const std::string& name, const std::string& what);
// Every name parse_type_mix takes, for help texts.
std::string type_mix_names();

// The type a row of `cols` elements can take when `wanted` does not divide it.
DType fallback_type(DType wanted, int64_t cols);

}  // namespace h2o
