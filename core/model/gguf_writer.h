#pragma once
// Writes a model as a GGUF file (version 3) that load_gguf (and llama.cpp)
// reads back: the architecture's keys, RoPE scaling, the embedded vocabulary
// and chat template when the model has them, and every tensor in the type a
// TypeMix gives it — copied when it already has that type, else converted
// row by row through float32 with the block writers of core/model/quant.h.
// The file appears whole or not at all (written under a temporary name).
#include <string>

#include "core/model/model.h"
#include "core/model/type_mix.h"

namespace h2o {

// Throws Error naming `path` on a write failure.
void write_gguf(const Model& model, const std::string& path, const TypeMix& types);

}  // namespace h2o
