#include "core/model/type_mix.h"

#include "core/base/error.h"
#include "core/model/quant.h"

namespace h2o {

namespace {

// llama.cpp's use_more_bits(): the first and last eighth of the layers, and every third one between.
bool more_bits(int layer, int layers) {
  return layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
}

}  // namespace

DType fallback_type(DType wanted, int64_t cols) {
  DType t = wanted;
  if (cols % block_size(t) != 0) {
    switch (t) {
      case DType::Q2_K: t = DType::Q4_0; break;
      case DType::Q3_K: t = DType::Q4_1; break;
      case DType::Q4_K: t = DType::Q5_0; break;
      case DType::Q5_K: t = DType::Q5_1; break;
      case DType::Q6_K: t = DType::Q8_0; break;
      default: break;
    }
  }
  return cols % block_size(t) == 0 ? t : DType::F16;
}

DType TypeMix::type_for(TensorRole role, int layer, int layers, int64_t cols) const {
  // Norms and biases: F32 beside quantised matrices (as llama.cpp writes them), else the float type asked for.
  if (role == TensorRole::Vector) return is_float(base) ? base : DType::F32;
  DType t = base;
  if (medium && (role == TensorRole::Classifier ||
                 ((role == TensorRole::AttnV || role == TensorRole::FfnDown) && more_bits(layer, layers))))
    t = boosted;
  return fallback_type(t, cols);
}

TypeMix parse_type_mix(const std::string& name, const std::string& what) {
  TypeMix mix;
  std::string plain = name;
  if (name.size() > 2 && name.compare(name.size() - 2, 2, "_m") == 0) {
    plain = name.substr(0, name.size() - 2);
    mix.medium = true;
  }
  std::string upper;
  for (char c : plain) upper += char(std::toupper(static_cast<unsigned char>(c)));
  const auto type = quant_type_from_name(upper);
  if (!type || (mix.medium && *type != DType::Q4_K && *type != DType::Q5_K))
    fail(what, "unknown weight type '" + name + "' (expected " + type_mix_names() + ")");
  mix.name = name;
  mix.base = *type;
  mix.boosted = mix.medium ? DType::Q6_K : *type;
  return mix;
}

std::string type_mix_names() {
  return "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, q4_k_m or q5_k_m";
}

}  // namespace h2o
