#include "studio_setup.h"

#include <fstream>
#include <sstream>

#include "defaults.h"
#include "error.h"

namespace h2o {

std::vector<PolicyConfig> studio_policies(const StudioConfig& c) {
  std::vector<PolicyConfig> out;
  for (PolicyKind kind : {PolicyKind::Full, PolicyKind::Streaming, PolicyKind::H2O}) {
    PolicyConfig p = policy_for_budget(kind, c.budget, c.sinks, c.rolling, c.slack);
    if (kind == PolicyKind::H2O && (c.heavy > 0 || c.recent > 0)) {
      // An explicit split: whichever part is not given takes the rest of the budget.
      const int rest = c.budget - c.sinks;
      p.heavy = c.heavy > 0 ? c.heavy : rest - c.recent;
      p.recent = c.recent > 0 ? c.recent : rest - c.heavy;
      if (p.heavy < 0 || p.recent < 1)
        fail("heavy/recent", "heavy " + std::to_string(p.heavy) + " + recent " + std::to_string(p.recent) +
                                 " do not fit the budget " + std::to_string(c.budget));
    }
    p.validate();
    out.push_back(p);
  }
  return out;
}

EngineOptions studio_engine_options(const StudioConfig& c) {
  EngineOptions o;
  o.policies = studio_policies(c);
  o.sampling.temperature = c.greedy ? 0.0f : c.temperature;
  o.sampling.seed = c.seed;
  o.max_new_tokens = c.max_new_tokens;
  o.loop_prompts = true;  // one endless conversation
  o.capture_layer = c.capture_layer;
  o.capture_rows = 1;
  o.validate();
  return o;
}

StudioInputs load_studio_inputs(const StudioConfig& c) {
  StudioInputs in;
  in.model_path = c.model;
  in.tokenizer_path = c.tokenizer;
  in.model = load_model(c.model);
  in.tokenizer = tokenizer_for(*in.model, c.tokenizer);
  return in;
}

static std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open the text file");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

BackendOptions studio_backend_options(const StudioConfig& c) {
  BackendOptions b;
  b.kind = c.backend;
  b.threads = c.threads;
  b.kv_limit_bytes = int64_t(c.kv_limit_mib) << 20;
  return b;
}

std::unique_ptr<Engine> make_studio_engine(const StudioConfig& c, const StudioInputs& in,
                                           std::unique_ptr<Backend> backend) {
  EngineOptions options = studio_engine_options(c);
  if (options.capture_layer >= in.model->config.n_layers) options.capture_layer = 0;
  auto engine = std::make_unique<Engine>(in.model, std::move(backend), in.tokenizer, options);
  if (c.forced) {
    if (c.forced_text.empty()) fail("teacher-forced text", "no text file chosen");
    std::vector<int> tokens{in.tokenizer->bos_id()};
    const auto ids = in.tokenizer->encode(read_text(c.forced_text));
    tokens.insert(tokens.end(), ids.begin(), ids.end());
    engine->start_forced(std::move(tokens));
  } else {
    engine->start_stream(c.prompts.empty() ? builtin_prompts() : load_mt_bench(c.prompts));
  }
  return engine;
}

std::string model_display_name(const std::string& path) {
  if (is_synthetic_path(path)) return path;
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace h2o
