// h2o-cli info: what a model or tokenizer file holds.
#include "app/cli_command.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "app/cli_flags.h"
#include "core/backends/make_backend.h"
#include "core/base/error.h"
#include "core/base/format.h"
#include "core/base/json_text.h"
#include "core/runtime/engine.h"

namespace h2o::cli {

namespace {

// info --backend: what that backend makes of the model — its device and
// precision, and on a device (cuda, cuda-sim) every byte of weights it
// uploaded. Made before anything is printed, so a refusal is the one line.
std::string backend_info(Flags& f, const std::shared_ptr<const Model>& model) {
  if (!f.given("--backend")) return "";
  const auto backend = make_backend(model, backend_options(f));
  std::string out = "backend     " + backend->describe() + "\n";
  if (const int64_t bytes = backend->device_weight_bytes(); bytes > 0)
    out += "device weights: " + format_mib(bytes) + " (every buffer " + backend->name() +
           " uploads; the KV cache and scratch come on top)\n";
  return out;
}

}  // namespace

int run_info(Flags& f, const char* argv0) {
  Loaded in = load_inputs(f, argv0);
  const std::string backend = backend_info(f, in.model);
  const Model& m = *in.model;
  const ModelConfig& c = m.config;
  const ChatTemplate chat = choose_template(*in.tokenizer, "");
  std::ostringstream rope;
  rope << "rope theta " << c.rope_theta;
  if (c.rope_scaling.type != "none") rope << ", " << c.rope_scaling.type << " scaling x" << c.rope_scaling.factor;
  std::cout << "model       " << m.path << "\n"
            << "format      " << m.format << ", " << c.architecture << ", weights " << m.weight_types() << ", "
            << format_mib(m.weight_bytes()) << "\n"
            << "shape       dim " << c.dim << ", hidden " << c.hidden_dim << ", layers " << c.n_layers << ", heads "
            << c.n_heads << ", kv heads " << c.n_kv_heads << " (head dim " << c.head_dim() << ")"
            << (c.attention_bias ? ", q/k/v biases" : "") << "\n"
            << "block       " << (c.norm == NormKind::Layer ? "LayerNorm" : "RMSNorm") << ", "
            << (c.ffn == FfnKind::Gelu ? "GELU MLP" : "SwiGLU") << (c.output_bias ? ", output biases" : "") << ", "
            << (c.parallel_residual ? "parallel" : "sequential") << " residual, RoPE on " << c.rotated_dims() << " of "
            << c.head_dim() << " head dims\n"
            << "vocabulary  " << c.vocab_size << " (BOS " << c.bos_id << ", EOS " << c.eos_id << "), classifier "
            << (m.shared_classifier() ? "shared with the embedding" : "separate") << "\n"
            << "context     " << c.max_seq_len << " trained, " << rope.str() << ", norm eps " << c.norm_eps << "\n"
            << "parameters  " << c.parameter_count() + (m.shared_classifier() ? 0 : m.weights.classifier.numel()) << "\n"
            << "kv bytes    " << int64_t(c.n_layers) * c.kv_dim() * 2 * 4 << " per cached token (f32)\n"
            << "tokenizer   " << in.tokenizer->describe() << "\n"
            << "template    " << chat.name << (in.tokenizer->chat_template().empty() ? " (the model names none)" : "")
            << ", " << json_dump(chat.pattern()) << "\n"
            << backend;
  return 0;
}

CLI::App* add_info(CLI::App& app, Flags& f) {
  CLI::App* info = app.add_subcommand("info", "what a model / tokenizer holds");
  add_model_flags(info, f);
  add_table_flag(info, "backend", f.backend, kCliInfo);
  add_table_flag(info, "precision", f.precision, kCliInfo);
  return info;
}

}  // namespace h2o::cli
