#include "core/studio/studio_setup.h"

#include "core/base/error.h"
#include "core/base/text_file.h"

namespace h2o {

std::vector<PolicyConfig> studio_policies(const StudioConfig& c) {
  if (c.policies.empty() || int(c.policies.size()) > kMaxStudioPolicies)
    fail("policies", "choose 1 to " + std::to_string(kMaxStudioPolicies) + " policies, got " +
                         std::to_string(c.policies.size()));
  PolicySettings settings;
  settings.budget = c.budget;
  settings.given["sinks"] = c.sinks;
  // An explicit H2O split: the part not given takes the rest of the budget.
  if (c.heavy > 0) settings.given["heavy"] = c.heavy;
  if (c.recent > 0) settings.given["recent"] = c.recent;
  settings.slack = c.slack;
  settings.rolling = c.rolling;
  std::vector<PolicyConfig> out;
  for (const std::string& name : c.policies) out.push_back(make_policy(name, settings));
  return out;
}

EngineOptions studio_engine_options(const StudioConfig& c) {
  EngineOptions o;
  o.policies = studio_policies(c);
  o.sampling.temperature = c.greedy ? 0.0f : c.temperature;
  o.sampling.seed = c.seed;
  o.max_new_tokens = c.max_new_tokens;
  o.loop_prompts = true;  // one endless conversation
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

BackendOptions studio_backend_options(const StudioConfig& c) {
  BackendOptions b;
  b.kind = c.backend;
  b.threads = c.threads;
  b.kv_limit_bytes = int64_t(c.kv_limit_mib) << 20;
  return b;
}

std::unique_ptr<Engine> make_studio_engine(const StudioConfig& c, const StudioInputs& in,
                                           std::unique_ptr<Backend> backend) {
  auto engine = std::make_unique<Engine>(in.model, std::move(backend), in.tokenizer, studio_engine_options(c));
  if (c.forced) {
    if (c.forced_text.empty()) fail("teacher-forced text", "no text file chosen");
    engine->start_forced(encode_with_bos(*in.tokenizer, read_text_file(c.forced_text)));
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
