// Chat templates: each family recognised from its Jinja, turns encoded with
// the template's special tokens but never the user's, stop ids, and the
// engine's turns (SEMANTICS.md "The stream": one BOS, stop tokens fed, the
// end-of-answer text after an answer cut by max_new_tokens), driven by a
// scripted backend that answers with tokens the test chooses.
#include <gtest/gtest.h>

#include <map>

#include "core/runtime/engine.h"
#include "core/text/chat_template.h"
#include "tests/assets.h"

using namespace h2o;

namespace {

// Excerpts of the templates the families ship (written here, not copied):
// only their markers matter.
const char* kLlama3 =
    "{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n{{ m.content }}<|eot_id|>{% endfor %}";
const char* kQwen2 =
    "{% if messages[0]['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}";
const char* kZephyr =
    "{% for m in messages %}{% if m.role == 'user' %}{{ '<|user|>\n' + m.content + eos_token }}{% endif %}"
    "{% if loop.last and add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}{% endfor %}";
const char* kLlama2 = "[INST] <<SYS>>\n{{ system }}\n<</SYS>>\n\n{{ user }} [/INST]";
const char* kMistral = "{{ bos_token }}{% for m in messages %}[INST] {{ m.content }} [/INST]{% endfor %}";

// A tokenizer of single bytes (id = byte + 10) with a few special tokens.
class TinyTokenizer final : public Tokenizer {
 public:
  explicit TinyTokenizer(bool adds_bos = true, std::string jinja = "") : adds_bos_(adds_bos), jinja_(std::move(jinja)) {}
  int vocab_size() const override { return 300; }
  int bos_id() const override { return 1; }
  int eos_id() const override { return 2; }
  int eot_id() const override { return 4; }
  bool adds_bos() const override { return adds_bos_; }
  std::vector<int> encode(const std::string& text) const override {
    std::vector<int> ids;
    for (unsigned char c : text) ids.push_back(10 + c);
    return ids;
  }
  std::string piece_text(int id, int) const override { return id >= 10 ? std::string(1, char(id - 10)) : ""; }
  std::string describe() const override { return "tiny"; }
  std::string chat_template() const override { return jinja_; }
  int special_id(const std::string& text) const override {
    const auto it = specials_.find(text);
    return it == specials_.end() ? -1 : it->second;
  }
  std::vector<Segment> split_specials(const std::string& text) const override {
    std::vector<Segment> out;
    size_t i = 0;
    std::string run;
    while (i < text.size()) {
      bool matched = false;
      for (const auto& [t, id] : specials_)
        if (text.compare(i, t.size(), t) == 0) {
          if (!run.empty()) out.push_back({run, -1}), run.clear();
          out.push_back({t, id});
          i += t.size();
          matched = true;
          break;
        }
      if (!matched) run += text[i++];
    }
    if (!run.empty()) out.push_back({run, -1});
    return out;
  }

 private:
  bool adds_bos_;
  std::string jinja_;
  std::map<std::string, int> specials_ = {
      {"<|end|>", 4}, {"<|user|>", 5}, {"<|bot|>", 6}, {"<|im_start|>", 7}, {"<|im_end|>", 8}};
};

}  // namespace

TEST(ChatTemplates, EachFamilyIsRecognisedByItsMarkers) {
  EXPECT_EQ(recognise_template(kLlama3).name, "llama3");
  EXPECT_EQ(recognise_template(kLlama3).end_of_answer, "<|eot_id|>");
  const ChatTemplate q = recognise_template(kQwen2);
  EXPECT_EQ(q.name, "chatml");
  EXPECT_EQ(q.prefix, "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n");
  EXPECT_EQ(q.between_turns, "\n");
  EXPECT_EQ(recognise_template(kZephyr).name, "zephyr");
  EXPECT_EQ(recognise_template(kLlama2).name, "llama2");
  EXPECT_EQ(recognise_template(kMistral).name, "mistral");
  EXPECT_EQ(recognise_template("").name, "plain");
  EXPECT_EQ(recognise_template("").pattern(), kDefaultTemplate);
  EXPECT_EQ(recognise_template("{{ something else }}").name, "plain");
  const ChatTemplate custom = template_from_pattern("Q: {turn}\nA:");
  EXPECT_EQ(custom.name, "custom");
  EXPECT_EQ(custom.before_turn, "Q: ");
  EXPECT_EQ(custom.after_turn, "\nA:");
}

TEST(ChatTemplates, SpecialTokensInTheTemplateNeverInTheUsersText) {
  const TinyTokenizer tok;
  ChatTemplate t = template_from_pattern("<|user|>{turn}<|end|><|bot|>");
  const auto ids = t.encode_turn(tok, "a<|end|>", true);
  // The user's "<|end|>" stays seven bytes of text; the template's are tokens.
  std::vector<int> want = {5};
  for (char c : std::string("a<|end|>")) want.push_back(10 + static_cast<unsigned char>(c));
  want.insert(want.end(), {4, 6});
  EXPECT_EQ(ids, want);
  // A template without special tokens is one string: the user's text joins its plain runs.
  const ChatTemplate plain = template_from_pattern(kDefaultTemplate);
  EXPECT_EQ(plain.encode_turn(tok, "hi", true), tok.encode("USER: hi\n\nASSISTANT: "));
  // Stop ids: EOS, the end-of-answer token, the vocabulary's end-of-turn token (once each).
  t.end_of_answer = "<|end|>";
  EXPECT_EQ(t.stop_ids(tok), (std::vector<int>{2, 4}));
  EXPECT_EQ(t.end_of_answer_ids(tok), (std::vector<int>{4}));
}

TEST(ChatTemplates, Llama3TurnsWithTheRealVocabulary) {
  H2O_REQUIRE_ASSET("vocab/ggml-vocab-llama-bpe.gguf");
  std::unique_ptr<Tokenizer> tok;
  try {
    tok = load_tokenizer(test::asset("vocab/ggml-vocab-llama-bpe.gguf"));
  } catch (const std::exception& e) {
    GTEST_SKIP() << e.what();  // a build without PCRE2
  }
  const ChatTemplate t = recognise_template(kLlama3);
  const auto ids = t.encode_turn(*tok, "Hi <|eot_id|>", true);
  const int header = tok->special_id("<|start_header_id|>"), eot = tok->special_id("<|eot_id|>");
  ASSERT_GE(header, 0);
  ASSERT_GE(eot, 0);
  EXPECT_EQ(ids.front(), header);
  // Exactly one <|eot_id|> token: the template's, after the user's text (whose copy stays text).
  EXPECT_EQ(std::count(ids.begin(), ids.end(), eot), 1);
  EXPECT_EQ(t.stop_ids(*tok).size(), 2u);  // <|end_of_text|> and <|eot_id|>
}

namespace {

// A cache that only counts, and a backend that answers from a script.
class CountingCache final : public SessionCache {
 public:
  explicit CountingCache(const PolicyConfig& p) : policy_(p) {}
  const PolicyConfig& policy() const override { return policy_; }
  int64_t tokens_seen() const override { return int64_t(fed.size()); }
  int layers() const override { return 1; }
  int kv_heads() const override { return 1; }
  int size(int, int) const override { return int(fed.size()); }
  LayerState read_layer(int layer) const override { return {layer, {{}}, {{}}}; }
  const EvictionSummary& last_evictions() const override { return none_; }
  int64_t live_bytes() const override { return 0; }
  int64_t allocated_bytes() const override { return 0; }
  std::vector<int> fed;

 private:
  PolicyConfig policy_;
  EvictionSummary none_;
};

class ScriptedBackend final : public Backend {
 public:
  ScriptedBackend(std::shared_ptr<const Model> model, std::vector<int> answers)
      : model_(std::move(model)), answers_(std::move(answers)) {}
  std::string name() const override { return "scripted"; }
  std::string describe() const override { return "scripted"; }
  const Model& model() const override { return *model_; }
  std::unique_ptr<SessionCache> new_cache(const PolicyConfig& p) override { return std::make_unique<CountingCache>(p); }
  std::unique_ptr<SessionCache> fork(const SessionCache& c) override {
    return std::make_unique<CountingCache>(static_cast<const CountingCache&>(c));
  }
  void forward(std::span<ForwardItem> items) override {
    for (ForwardItem& item : items) {
      auto& cache = dynamic_cast<CountingCache&>(*item.cache);
      cache.fed.insert(cache.fed.end(), item.tokens.begin(), item.tokens.end());
      if (item.chosen) *item.chosen = answers_[next_++ % answers_.size()];
    }
  }
  int64_t peak_kv_bytes() const override { return 0; }

 private:
  std::shared_ptr<const Model> model_;
  std::vector<int> answers_;
  size_t next_ = 0;
};

// Runs two turns with the given answers; returns what the cache was fed.
// `pattern` is the --template flag; "" uses the tokenizer's own `jinja`.
std::vector<int> two_turns(std::vector<int> answers, int max_new, bool adds_bos, const std::string& pattern,
                           const std::string& jinja = "") {
  auto model = make_synthetic({"stories260K", 1, DType::F32, 0, 0});
  EngineOptions o;
  o.policies = {PolicyConfig{}};
  o.max_new_tokens = max_new;
  o.chat_template = pattern;
  auto backend = std::make_unique<ScriptedBackend>(model, std::move(answers));
  Engine engine(model, std::move(backend), std::make_shared<TinyTokenizer>(adds_bos, jinja), o);
  Turn a, b;
  a.text = "x";
  b.text = "y";
  engine.start_stream({a, b});
  while (!engine.done()) engine.step();
  return dynamic_cast<const CountingCache&>(engine.sessions()[0]->cache()).fed;
}

}  // namespace

TEST(EngineTurns, OneBosAStopTokenIsFedAndACutAnswerGetsItsEnd) {
  const std::string pattern = "<|user|>{turn}<|end|><|bot|>";
  const int x = 10 + 'x', y = 10 + 'y';
  // The first answer stops itself with <|end|> (4), which is fed before the
  // next turn; the script wraps round, so the second answer is 101 102 100
  // and stops at the next 4 (the stream ends there, so that one is not fed).
  auto fed = two_turns({100, 4, 101, 102}, 5, true, pattern);
  EXPECT_EQ(fed, (std::vector<int>{1, 5, x, 4, 6, 100, 4, 5, y, 4, 6, 101, 102, 100}));
  // Cut by max_new_tokens (2): the last token is fed; a --template pattern
  // names no end of an answer, so the next turn follows at once.
  fed = two_turns({100, 101}, 2, true, pattern);
  EXPECT_EQ(fed, (std::vector<int>{1, 5, x, 4, 6, 100, 101, 5, y, 4, 6, 100}));
  // The model's own ChatML template: a cut answer gets <|im_end|> (8), then
  // the "\n" between turns that the second turn's prompt starts with.
  const char* chatml = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}";
  fed = two_turns({100, 101}, 2, true, "", chatml);
  const TinyTokenizer tok(true, chatml);
  const ChatTemplate t = recognise_template(chatml);
  const auto first = t.encode_turn(tok, "x", true), second = t.encode_turn(tok, "y", false);
  EXPECT_EQ(second.front(), 10 + '\n');
  std::vector<int> want{1};
  want.insert(want.end(), first.begin(), first.end());
  want.insert(want.end(), {100, 101, 8});
  want.insert(want.end(), second.begin(), second.end());
  want.push_back(100);
  EXPECT_EQ(fed, want);
  // <|im_end|> generated by the model ends its answer and is not repeated.
  fed = two_turns({100, 8, 100}, 5, true, "", chatml);
  EXPECT_EQ(std::count(fed.begin(), fed.end(), 8), 3);  // two prompts' and the answer's own
  // A vocabulary that adds no BOS (Qwen2) starts with the template itself.
  fed = two_turns({100, 4}, 5, false, pattern);
  EXPECT_EQ(fed.front(), 5);
  EXPECT_EQ(std::count(fed.begin(), fed.end(), 1), 0);
}
