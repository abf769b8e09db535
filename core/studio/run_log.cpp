#include "core/studio/run_log.h"

#include <ctime>
#include <filesystem>
#include <memory>

#include "core/base/error.h"
#include "core/base/format.h"
#include "core/base/json_text.h"
#include "core/base/sha256.h"
#include "core/base/version.h"

namespace h2o {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

nlohmann::json describe_model(const Model& m, bool hash_file) {
  const ModelConfig& c = m.config;
  nlohmann::json model = {{"path", m.path}, {"format", m.format}, {"dtype", dtype_name(m.weight_dtype())},
                          {"dim", c.dim}, {"hidden_dim", c.hidden_dim}, {"n_layers", c.n_layers},
                          {"n_heads", c.n_heads}, {"n_kv_heads", c.n_kv_heads}, {"vocab_size", c.vocab_size},
                          {"max_seq_len", c.max_seq_len}, {"rope_theta", c.rope_theta}, {"norm_eps", c.norm_eps},
                          {"parameters", c.parameter_count()}};
  const bool real_file = m.format != "synthetic" && std::filesystem::is_regular_file(m.path);
  if (hash_file && real_file) model["sha256"] = sha256_file(m.path);
  return model;
}

nlohmann::json describe_run(const Engine& engine, const RunInfo& info) {
  const nlohmann::json model = describe_model(engine.model(), info.hash_files);
  const std::string started = info.started.empty() ? utc_timestamp(std::time(nullptr)) : info.started;
  nlohmann::json j = {{"program", "h2o-studio"}, {"version", version()}, {"command", info.command},
                      {"command_line", info.command_line}, {"started", started}, {"model", model},
                      {"backend", {{"name", engine.backend().name()}, {"describe", engine.backend().describe()}}}};
  if (const Tokenizer* t = engine.tokenizer()) {
    j["tokenizer"] = {{"describe", t->describe()}, {"path", info.tokenizer_path}};
    if (info.hash_files && std::filesystem::is_regular_file(info.tokenizer_path))
      j["tokenizer"]["sha256"] = sha256_file(info.tokenizer_path);
  }
  if (!info.prompts_path.empty()) j["prompts"] = info.prompts_path;
  const EngineOptions& o = engine.options();
  j["policies"] = nlohmann::json::array();
  for (const auto& p : o.policies) j["policies"].push_back(policy_json(p));
  j["sampling"] = {{"temperature", o.sampling.temperature}, {"top_p", o.sampling.top_p},
                   {"seed", o.sampling.seed}, {"greedy", o.sampling.temperature <= 0}};
  j["options"] = {{"max_new_tokens", o.max_new_tokens}, {"prefill_chunk", o.prefill_chunk},
                  {"forced_chunk", o.forced_chunk}, {"chat_template", engine.chat_template().name},
                  {"chat_pattern", engine.chat_template().pattern()}, {"batched", o.batched}};
  return j;
}

nlohmann::json describe_totals(const Engine& engine) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : engine.sessions()) {
    const SessionTotals& t = s->totals();
    nlohmann::json j = {{"policy", s->policy().describe()},
                        {"generated_tokens", t.generated},
                        {"prefill_tokens", t.prefilled},
                        {"decode_tokens_per_s", t.decode_tokens_per_s()},
                        {"prefill_tokens_per_s", t.prefill_tokens_per_s()},
                        {"cached_tokens", s->cache().max_size()},
                        {"kv_live_bytes", s->cache().live_bytes()},
                        {"kv_allocated_bytes", s->cache().allocated_bytes()}};
    if (s->policy().kv.quantized()) j["kv_quantized_tokens"] = s->cache().quantized_tokens();
    if (!s->stopped().empty()) j["stopped"] = s->stopped();
    if (t.scored > 0) {
      j["scored_tokens"] = t.scored;
      j["perplexity"] = t.perplexity();
      j["mean_nll"] = t.nll_sum / t.scored;
      if (!std::isnan(t.mean_kl())) {
        j["mean_kl_vs_full"] = t.mean_kl();
        j["top1_agreement"] = t.agreement();
      }
    }
    out.push_back(j);
  }
  return out;
}

RunLog::RunLog(const std::string& dir, const Engine& engine, const RunInfo& info)
    : files_(dir, info.fresh_folder), engine_(engine), dir_(dir) {
  manifest_ = describe_run(engine, info);
  jsonl_ = &files_.add(dir + "/steps.jsonl");
  csv_ = &files_.add(dir + "/steps.csv");
  evictions_ = &files_.add(dir + "/evictions.csv");
  *csv_ << "step,phase,prompt,policy,fed,token,text,cached_tokens,kv_live_bytes,kv_allocated_bytes,"
                    "step_ms,decode_tokens_per_s,evicted\n";
  *evictions_ << "step,policy,layer,kv_head,position\n";
  if (info.command == "eval") {
    tokens_ = &files_.add(dir + "/tokens.csv");
    *tokens_ << "step,policy,position,nll,kl_vs_full,top1_agree\n";
  }
}

std::ostream& RunLog::add_output(const std::string& path) { return files_.add(path); }

// A position that left every (layer, KV head) in one step (always so under
// StreamingLLM) is written once with layer and kv_head "all"; the rest one row
// per (layer, head).
void RunLog::write_evictions(int64_t step, const std::string& policy, const EvictionSummary& evictions) {
  for (int32_t position : evictions.everywhere)
    *evictions_ << step << ',' << csv_field(policy) << ",all,all," << position << '\n';
  for (const EvictionEvent& e : evictions.by_head)
    *evictions_ << step << ',' << csv_field(policy) << ',' << e.layer << ',' << e.kv_head << ','
                         << e.position << '\n';
}

void RunLog::write(const StepRecord& record) {
  const auto& sessions = engine_.sessions();
  const ModelConfig& c = engine_.model().config;
  for (const SessionRecord& s : record.sessions) {
    const std::string policy = sessions[size_t(s.session)]->policy().describe();
    const int64_t evicted = s.evictions.count(c.n_layers, c.n_kv_heads);
    nlohmann::json j = {{"step", record.step},
                        {"phase", phase_name(record.phase)},
                        {"prompt", record.prompt_index},
                        {"policy", policy},
                        {"fed", s.fed.size()},
                        {"cached_tokens", s.cached_tokens},
                        {"kv_live_bytes", s.live_bytes},
                        {"kv_allocated_bytes", s.allocated_bytes},
                        {"step_ms", s.step_ms},
                        {"decode_tokens_per_s", s.decode_tokens_per_s},
                        {"evicted", evicted}};
    if (sessions[size_t(s.session)]->policy().kv.quantized()) j["kv_quantized_tokens"] = s.quantized_tokens;
    if (s.token >= 0) j.update({{"token", s.token}, {"text", s.text}});
    if (!s.nll.empty()) j["nll"] = s.nll;
    if (!s.kl.empty()) j.update({{"kl_vs_full", s.kl}, {"top1_agree", s.agree}});
    if (!s.stopped.empty()) j["stopped"] = s.stopped;
    *jsonl_ << json_dump(j) << '\n';
    if (!s.stopped.empty()) continue;  // the session stopped: it did no work this step

    *csv_ << record.step << ',' << phase_name(record.phase) << ',' << record.prompt_index << ','
                   << csv_field(policy) << ',' << s.fed.size() << ',' << s.token << ',' << csv_field(s.text) << ','
                   << s.cached_tokens << ',' << s.live_bytes << ',' << s.allocated_bytes << ',' << s.step_ms << ','
                   << s.decode_tokens_per_s << ',' << evicted << '\n';
    write_evictions(record.step, policy, s.evictions);
    if (tokens_) {
      for (size_t r = 0; r < s.nll.size(); ++r) {
        *tokens_ << record.step << ',' << csv_field(policy) << ',' << s.position + int64_t(r) << ',' << s.nll[r];
        if (r < s.kl.size()) *tokens_ << ',' << s.kl[r] << ',' << s.agree[r];
        else *tokens_ << ",,";
        *tokens_ << '\n';
      }
    }
  }
  files_.check();
}

// Abandoned (an error mid-run): RunFiles removes the temporaries, the lock and the folder it made.
RunLog::~RunLog() = default;

void RunLog::close(const std::string& status) {
  manifest_["status"] = status;
  manifest_["partial"] = status != "complete";
  manifest_["finished"] = utc_timestamp(std::time(nullptr));
  manifest_["steps"] = engine_.steps();
  manifest_["totals"] = describe_totals(engine_);
  manifest_["peak_kv_allocated_bytes"] = engine_.backend().peak_kv_bytes();
  files_.add(dir_ + "/manifest.json") << json_dump(manifest_, 2) << "\n";
  files_.publish();
}

}  // namespace h2o
