#pragma once
// How a conversation's turns are wrapped for the model (SEMANTICS.md "The
// stream"): the model's own template when its files carry one this module
// recognises (Llama-2 [INST], Llama-3 headers, ChatML, Zephyr/TinyLlama,
// Mistral), else the StreamingLLM demo's "USER: {turn}\n\nASSISTANT: "; a
// --template flag overrides. Template text may name special tokens
// ("<|eot_id|>"), which become those tokens; the user's text never does.
#include <string>
#include <vector>

#include "core/text/tokenizer.h"

namespace h2o {

struct ChatTemplate {
  std::string name = "plain";  // llama3, chatml, llama2, mistral, zephyr, plain, custom
  std::string prefix;          // once, at the start of the stream after BOS (ChatML's default system turn)
  std::string before_turn;     // before each user turn
  std::string after_turn;      // after the user's text, up to the answer
  std::string end_of_answer;   // what ends an answer ("<|eot_id|>"): fed after an answer cut by max_new_tokens
  std::string between_turns;   // after an answer's end, before the next turn ("\n" in ChatML)

  // The prompt of one turn, as ids: the template's text with its special
  // tokens, the user's `text` as plain text. `first` starts the stream (the
  // prefix; BOS is the caller's), else the text between turns comes first.
  std::vector<int> encode_turn(const Tokenizer& tokenizer, const std::string& text, bool first) const;
  // What a session feeds before the next turn when its answer was cut by
  // max_new_tokens instead of ending itself.
  std::vector<int> end_of_answer_ids(const Tokenizer& tokenizer) const {
    return tokenizer.encode_with_specials(end_of_answer);
  }
  // The ids that end an answer: EOS, the end-of-answer token, the vocabulary's end-of-turn token.
  std::vector<int> stop_ids(const Tokenizer& tokenizer) const;
  // "USER: {turn}\n\nASSISTANT: " style, as --template writes it.
  std::string pattern() const { return before_turn + "{turn}" + after_turn; }
};

// "PREFIX{turn}SUFFIX" (a --template flag): everything before {turn} comes
// before the user's text, the rest after it; no {turn}: the text comes last.
ChatTemplate template_from_pattern(const std::string& pattern);
// The family a model's own Jinja template belongs to, recognised by the
// markers it writes; "plain" (the demo's template) when none fits.
ChatTemplate recognise_template(const std::string& jinja);
// What a run uses: the flag's pattern when given, else the tokenizer's own template.
ChatTemplate choose_template(const Tokenizer& tokenizer, const std::string& pattern_flag);

}  // namespace h2o
