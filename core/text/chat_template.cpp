#include "core/text/chat_template.h"

#include <algorithm>

#include "core/text/prompts.h"

namespace h2o {

namespace {

bool has(const std::string& text, const char* marker) { return text.find(marker) != std::string::npos; }

ChatTemplate family(const char* name, const char* before, const char* after, const char* end, const char* between) {
  ChatTemplate t;
  t.name = name;
  t.before_turn = before;
  t.after_turn = after;
  t.end_of_answer = end;
  t.between_turns = between;
  return t;
}

}  // namespace

ChatTemplate template_from_pattern(const std::string& pattern) {
  ChatTemplate t;
  t.name = pattern == kDefaultTemplate ? "plain" : "custom";
  const size_t at = pattern.find("{turn}");
  t.before_turn = at == std::string::npos ? pattern : pattern.substr(0, at);
  t.after_turn = at == std::string::npos ? "" : pattern.substr(at + 6);
  return t;
}

ChatTemplate recognise_template(const std::string& jinja) {
  if (has(jinja, "<|start_header_id|>"))
    return family("llama3", "<|start_header_id|>user<|end_header_id|>\n\n",
                  "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n", "<|eot_id|>", "");
  if (has(jinja, "<|im_start|>")) {
    ChatTemplate t = family("chatml", "<|im_start|>user\n", "<|im_end|>\n<|im_start|>assistant\n", "<|im_end|>", "\n");
    // Qwen2's template opens a conversation that has none with its default system turn.
    if (has(jinja, "You are a helpful assistant"))
      t.prefix = "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n";
    return t;
  }
  if (has(jinja, "<|user|>") && has(jinja, "<|assistant|>"))
    return family("zephyr", "<|user|>\n", "</s>\n<|assistant|>\n", "</s>", "\n");
  if (has(jinja, "[INST]"))
    return has(jinja, "<<SYS>>") ? family("llama2", "[INST] ", " [/INST]", "</s>", "")
                                 : family("mistral", "[INST] ", " [/INST]", "</s>", "");
  return template_from_pattern(kDefaultTemplate);
}

ChatTemplate choose_template(const Tokenizer& tokenizer, const std::string& pattern_flag) {
  if (!pattern_flag.empty()) return template_from_pattern(pattern_flag);
  return recognise_template(tokenizer.chat_template());
}

std::vector<int> ChatTemplate::encode_turn(const Tokenizer& tokenizer, const std::string& text, bool first) const {
  // Template text cut at its special tokens; the user's text joins the plain
  // runs beside it, so that a template without special tokens is encoded in
  // one piece, as a plain "USER: ...\n\nASSISTANT: " string would be.
  std::vector<Tokenizer::Segment> parts;
  const auto add_template = [&](const std::string& t) {
    if (t.empty()) return;
    for (auto& s : tokenizer.split_specials(t)) parts.push_back(std::move(s));
  };
  add_template(first ? prefix : between_turns);
  add_template(before_turn);
  parts.push_back({text, -1});
  add_template(after_turn);
  std::vector<int> ids;
  std::string run;
  const auto flush = [&] {
    if (run.empty()) return;
    const auto plain = tokenizer.encode(run);
    ids.insert(ids.end(), plain.begin(), plain.end());
    run.clear();
  };
  for (const auto& s : parts) {
    if (s.id < 0) {
      run += s.text;
      continue;
    }
    flush();
    ids.push_back(s.id);
  }
  flush();
  return ids;
}

std::vector<int> ChatTemplate::stop_ids(const Tokenizer& tokenizer) const {
  std::vector<int> ids{tokenizer.eos_id()};
  for (int id : {end_of_answer.empty() ? -1 : tokenizer.special_id(end_of_answer), tokenizer.eot_id()})
    if (id >= 0 && std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  return ids;
}

}  // namespace h2o
