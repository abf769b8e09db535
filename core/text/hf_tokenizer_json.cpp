// tokenizer.json -> BpeVocab.
//
// What is read: model (type BPE: vocab, merges as "a b" strings or [a, b]
// pairs, ignore_merges), added_tokens (special: true -> control tokens,
// false -> user-defined; both are special tokens here), normalizer (none or
// NFC), pre_tokenizer (ByteLevel, Split with behavior Isolated, Sequence of
// those), and post_processor (a TemplateProcessing that puts a special token
// before the text means BOS is added). tokenizer_config.json beside the file,
// where present, names BOS and EOS and may say add_bos_token.
//
// Every value is type-checked before use, so a malformed file is one Error
// line naming the file and the key, never a json exception.
#include "core/text/hf_tokenizer_json.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_map>

#include "core/base/error.h"
#include "core/base/json_text.h"
#include "core/base/mapped_file.h"

namespace h2o::text {
namespace {

using json = nlohmann::json;

constexpr int kMaxNesting = 8;    // Sequence inside Sequence...

// The member `key` of an object, or nullptr when absent or null.
const json* member(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

class JsonFile {
 public:
  explicit JsonFile(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void error(const std::string& problem) const { fail(path_, problem); }
  const std::string& path() const { return path_; }

  json parse() const {
    const auto file = MappedFile::open(path_);
    const auto* begin = reinterpret_cast<const char*>(file->data());
    return parse_json_document(begin, begin + file->size(), path_);
  }

  const std::string& string(const json& value, const std::string& where) const {
    if (!value.is_string()) error(where + " should be a string, is " + value.type_name());
    return value.get_ref<const std::string&>();
  }
  std::optional<std::string> optional_string(const json& object, const char* key, const std::string& where) const {
    const json* v = member(object, key);
    if (!v) return std::nullopt;
    return string(*v, where + "." + key);
  }
  bool boolean(const json& object, const char* key, bool fallback, const std::string& where) const {
    const json* v = member(object, key);
    if (!v) return fallback;
    if (!v->is_boolean()) error(where + "." + key + " should be true or false, is " + v->type_name());
    return v->get<bool>();
  }
  // Ids must run from 0 without gaps, so none can reach the number of
  // tokens (`count`); checking that first bounds what a file can make us allocate.
  int id(const json& value, size_t count, const std::string& where) const {
    if (!value.is_number_integer()) error(where + " should be a token id, is " + value.type_name());
    if (!value.is_number_unsigned() && value.get<int64_t>() < 0) error(where + " is negative");
    const uint64_t v = value.get<uint64_t>();
    if (v >= count)
      error(where + " = " + std::to_string(v) + " is too large: there are " + std::to_string(count) +
            " tokens, and ids must run from 0 without gaps");
    return static_cast<int>(v);
  }
  const json& array(const json& value, const std::string& where) const {
    if (!value.is_array()) error(where + " should be an array, is " + value.type_name());
    return value;
  }

 private:
  std::string path_;
};

// A literal string as a PCRE2 pattern.
std::string literal_pattern(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (std::string_view("\\^$.|?*+()[]{}-/#").find(c) != std::string_view::npos) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

struct PreTokenizerSteps {
  std::vector<std::string> patterns;
  bool byte_level = false;
};

void read_pre_tokenizer(const JsonFile& f, const json& node, const std::string& where, PreTokenizerSteps& steps,
                        int depth) {
  if (depth > kMaxNesting) f.error(where + " nests Sequences too deeply");
  if (!node.is_object()) f.error(where + " should be an object, is " + node.type_name());
  const json* type_value = member(node, "type");
  if (!type_value) f.error(where + " has no type");
  const std::string& type = f.string(*type_value, where + ".type");
  if (type == "Sequence") {
    const json* list = member(node, "pretokenizers");
    if (!list) f.error(where + " (Sequence) has no pretokenizers");
    f.array(*list, where + ".pretokenizers");
    for (size_t i = 0; i < list->size(); ++i)
      read_pre_tokenizer(f, (*list)[i], where + ".pretokenizers[" + std::to_string(i) + "]", steps, depth + 1);
  } else if (type == "ByteLevel") {
    // Hugging Face's default is true, so an absent flag means a prefix space.
    if (f.boolean(node, "add_prefix_space", true, where))
      f.error(where + " (ByteLevel) has add_prefix_space, which is not supported");
    if (f.boolean(node, "use_regex", true, where)) steps.patterns.push_back(gpt2_pattern());
    steps.byte_level = true;
  } else if (type == "Split") {
    // After ByteLevel the text is in the byte alphabet; a regex over that is not supported.
    if (steps.byte_level) f.error(where + " (Split) comes after ByteLevel, which is not supported");
    const json* pattern = member(node, "pattern");
    if (!pattern || !pattern->is_object()) f.error(where + " (Split) has no pattern object");
    if (const json* regex = member(*pattern, "Regex")) {
      steps.patterns.push_back(f.string(*regex, where + ".pattern.Regex"));
    } else if (const json* literal = member(*pattern, "String")) {
      steps.patterns.push_back(literal_pattern(f.string(*literal, where + ".pattern.String")));
    } else {
      f.error(where + ".pattern has neither Regex nor String");
    }
    const std::string behavior = f.optional_string(node, "behavior", where).value_or("Isolated");
    if (behavior != "Isolated")
      f.error(where + " (Split) behavior " + quote_text(behavior) + " is not supported (only Isolated)");
    if (f.boolean(node, "invert", false, where)) f.error(where + " (Split) with invert is not supported");
  } else {
    f.error(where + " type " + quote_text(type) + " is not supported (ByteLevel, Split, Sequence)");
  }
}

// true for NFC, false for none; anything else is refused.
bool read_normalizer(const JsonFile& f, const json* node, const std::string& where, int depth) {
  if (!node) return false;
  if (depth > kMaxNesting) f.error(where + " nests Sequences too deeply");
  const json* type_value = member(*node, "type");
  if (!type_value) f.error(where + " has no type");
  const std::string& type = f.string(*type_value, where + ".type");
  if (type == "NFC") return true;
  if (type == "Sequence") {
    const json* list = member(*node, "normalizers");
    if (!list) f.error(where + " (Sequence) has no normalizers");
    f.array(*list, where + ".normalizers");
    bool nfc = false;
    for (size_t i = 0; i < list->size(); ++i)
      nfc = read_normalizer(f, &(*list)[i], where + ".normalizers[" + std::to_string(i) + "]", depth + 1) || nfc;
    return nfc;
  }
  f.error(where + " type " + quote_text(type) + " is not supported (only NFC)");
}

std::pair<std::string, std::string> read_merge(const JsonFile& f, const json& value, size_t index) {
  const std::string where = "model.merges[" + std::to_string(index) + "]";
  if (value.is_array()) {
    if (value.size() != 2) f.error(where + " should be a pair of pieces");
    return {f.string(value[0], where + "[0]"), f.string(value[1], where + "[1]")};
  }
  const std::string& line = f.string(value, where);
  const size_t space = line.find(' ');
  if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
      line.find(' ', space + 1) != std::string::npos)
    f.error(where + " " + quote_text(line) + " is not two pieces separated by one space");
  return {line.substr(0, space), line.substr(space + 1)};
}

// The text of the special token a post-processor puts before the text, if any.
std::optional<std::string> template_bos(const JsonFile& f, const json* node, int depth) {
  if (!node || depth > kMaxNesting) return std::nullopt;
  const json* type = member(*node, "type");
  if (!type || !type->is_string()) return std::nullopt;
  if (*type == "Sequence") {
    const json* list = member(*node, "processors");
    if (!list || !list->is_array()) return std::nullopt;
    for (const json& p : *list)
      if (auto bos = template_bos(f, &p, depth + 1)) return bos;
    return std::nullopt;
  }
  if (*type != "TemplateProcessing") return std::nullopt;
  const json* single = member(*node, "single");
  if (!single || !single->is_array() || single->empty()) return std::nullopt;
  const json* special = member((*single)[0], "SpecialToken");
  if (!special) return std::nullopt;
  const json* id = member(*special, "id");
  if (!id) return std::nullopt;
  return f.string(*id, "post_processor.single[0].SpecialToken.id");
}

// A token named in tokenizer_config.json: a string, or {"content": string}.
std::optional<std::string> config_token(const JsonFile& f, const json& config, const char* key) {
  const json* v = member(config, key);
  if (!v) return std::nullopt;
  if (v->is_object()) {
    const json* content = member(*v, "content");
    if (!content) f.error(std::string(key) + " has no content");
    return f.string(*content, std::string(key) + ".content");
  }
  return f.string(*v, key);
}

struct TokenizerConfig {
  std::optional<std::string> bos, eos;
  std::optional<bool> add_bos;
  std::string chat_template;
  std::string path;
};

TokenizerConfig read_config_beside(const std::string& tokenizer_path) {
  TokenizerConfig config;
  const auto path = std::filesystem::path(tokenizer_path).parent_path() / "tokenizer_config.json";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return config;
  config.path = path.string();
  const JsonFile f(config.path);
  const json root = f.parse();
  if (!root.is_object()) f.error("should be a JSON object, is " + std::string(root.type_name()));
  config.bos = config_token(f, root, "bos_token");
  config.eos = config_token(f, root, "eos_token");
  if (member(root, "add_bos_token")) config.add_bos = f.boolean(root, "add_bos_token", false, "tokenizer_config");
  // A string, or named templates [{"name", "template"}...] of which "default" is the chat one.
  if (const json* t = member(root, "chat_template")) {
    if (t->is_string()) config.chat_template = t->get<std::string>();
    else if (t->is_array())
      for (const json& named : *t)
        if (named.is_object() && named.value("name", "") == "default" && named.contains("template") &&
            named["template"].is_string())
          config.chat_template = named["template"].get<std::string>();
  }
  return config;
}

}  // namespace

std::string chat_template_beside(const std::string& tokenizer_path) {
  return read_config_beside(tokenizer_path).chat_template;
}

namespace {

// The model object, checked to be a byte-level BPE with a vocabulary and merges.
const json& bpe_model(const JsonFile& f, const json& root) {
  const json* model = member(root, "model");
  if (!model || !model->is_object()) f.error("has no model object: not a Hugging Face tokenizer.json");
  const std::string type = f.optional_string(*model, "type", "model").value_or(member(*model, "merges") ? "BPE" : "");
  if (type.empty()) f.error("model has no type");
  if (type != "BPE") f.error("model type " + quote_text(type) + " is not supported (only byte-level BPE)");
  if (f.boolean(*model, "byte_fallback", false, "model"))
    f.error("is a BPE with byte fallback (SentencePiece-style, as Llama-2 and Mistral ship): give its tokenizer.model instead");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (const auto affix = f.optional_string(*model, key, "model"); affix && !affix->empty())
      f.error(std::string("model.") + key + " is not supported (not a byte-level BPE)");
  const json* vocab = member(*model, "vocab");
  if (!vocab || !vocab->is_object()) f.error("model.vocab should be an object of piece: id");
  const json* merges = member(*model, "merges");
  if (!merges) f.error("model has no merges");
  f.array(*merges, "model.merges");
  return *model;
}

// Pieces by id into `out`: the model's vocabulary, then the added tokens.
void read_pieces(const JsonFile& f, const json& root, const json& vocab, BpeVocab& out) {
  std::vector<std::optional<std::string>> slots;
  std::vector<int> types;
  const auto place = [&](int id, const std::string& text, int piece_type, const std::string& where) {
    if (size_t(id) >= slots.size()) {
      slots.resize(size_t(id) + 1);
      types.resize(size_t(id) + 1, kPieceNormal);
    }
    std::optional<std::string>& slot = slots[size_t(id)];
    if (slot && piece_type == kPieceNormal && *slot != text)
      f.error(where + ": id " + std::to_string(id) + " is given to both " + quote_text(*slot) + " and " +
              quote_text(text));
    // A non-special added token that repeats a vocabulary piece stays a
    // normal piece, which merges may make (as they do in Hugging Face).
    if (slot && *slot == text && piece_type == kPieceUserDefined && types[size_t(id)] == kPieceNormal) return;
    slot = text;
    types[size_t(id)] = piece_type;
  };
  const json* added = member(root, "added_tokens");
  if (added) f.array(*added, "added_tokens");
  const size_t count = vocab.size() + (added ? added->size() : 0);
  for (const auto& [piece, id] : vocab.items())
    place(f.id(id, count, "model.vocab[" + quote_text(piece) + "]"), piece, kPieceNormal, "model.vocab");
  for (size_t i = 0; added && i < added->size(); ++i) {
    const std::string where = "added_tokens[" + std::to_string(i) + "]";
    const json& token = (*added)[i];
    if (!token.is_object()) f.error(where + " should be an object");
    const json* id = member(token, "id");
    const json* content = member(token, "content");
    if (!id || !content) f.error(where + " needs an id and a content");
    const bool special = f.boolean(token, "special", false, where);
    place(f.id(*id, count, where + ".id"), f.string(*content, where + ".content"),
          special ? kPieceControl : kPieceUserDefined, where);
  }
  if (slots.empty()) f.error("model.vocab is empty");
  out.pieces.reserve(slots.size());
  for (size_t id = 0; id < slots.size(); ++id) {
    if (!slots[id]) f.error("token id " + std::to_string(id) + " has no piece (ids must run from 0 without gaps)");
    out.pieces.push_back(std::move(*slots[id]));
  }
  out.types = std::move(types);
}

// BOS, EOS and whether BOS is added: tokenizer_config.json, else the
// post-processor, else the usual names.
void read_special_ids(const JsonFile& f, const json& root, const std::string& path, BpeVocab& out) {
  std::unordered_map<std::string, int> id_of;
  for (size_t id = 0; id < out.pieces.size(); ++id) id_of.emplace(out.pieces[id], static_cast<int>(id));
  const auto find_id = [&](const std::string& text) {
    const auto it = id_of.find(text);
    return it == id_of.end() ? -1 : it->second;
  };
  const auto first_known = [&](std::initializer_list<const char*> names) {
    for (const char* name : names)
      if (const int id = find_id(name); id >= 0) return id;
    return -1;
  };
  const TokenizerConfig config = read_config_beside(path);
  const auto config_id = [&](const std::optional<std::string>& text, const char* key) {
    const int id = find_id(*text);
    if (id < 0) fail(config.path, std::string(key) + " " + quote_text(*text) + " is not a token of " + path);
    return id;
  };
  const std::optional<std::string> template_first = template_bos(f, member(root, "post_processor"), 0);
  if (config.bos) out.bos_id = config_id(config.bos, "bos_token");
  else if (template_first && find_id(*template_first) >= 0) out.bos_id = find_id(*template_first);
  else out.bos_id = first_known({"<|begin_of_text|>", "<s>", "<|endoftext|>", "<|startoftext|>"});
  if (out.bos_id < 0) f.error("names no BOS token: put its tokenizer_config.json beside it");
  if (config.eos) out.eos_id = config_id(config.eos, "eos_token");
  else out.eos_id = first_known({"<|end_of_text|>", "<|endoftext|>", "</s>", "<|im_end|>", "<eos>"});
  if (out.eos_id < 0) f.error("names no EOS token: put its tokenizer_config.json beside it");
  out.add_bos = config.add_bos.value_or(template_first.has_value());
  out.chat_template = config.chat_template;
}

BpeVocab read_checked(const std::string& path) {
  const JsonFile f(path);
  const json root = f.parse();
  if (!root.is_object()) f.error("should be a JSON object, is " + std::string(root.type_name()));
  const json& model = bpe_model(f, root);  // byte-level BPE only
  BpeVocab out;
  read_pieces(f, root, model.at("vocab"), out);
  const json& merges = model.at("merges");
  out.merges.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) out.merges.push_back(read_merge(f, merges[i], i));
  out.ignore_merges = f.boolean(model, "ignore_merges", false, "model");
  out.nfc = read_normalizer(f, member(root, "normalizer"), "normalizer", 0);

  PreTokenizerSteps steps;
  const json* pre = member(root, "pre_tokenizer");
  if (!pre) f.error("has no pre_tokenizer: not a byte-level BPE tokenizer");
  read_pre_tokenizer(f, *pre, "pre_tokenizer", steps, 0);
  if (!steps.byte_level) f.error("its pre_tokenizer has no ByteLevel step: not a byte-level BPE tokenizer");
  out.patterns = std::move(steps.patterns);
  out.pre_name = "tokenizer.json";
  read_special_ids(f, root, path, out);
  return out;
}

}  // namespace

BpeVocab read_hf_tokenizer_json(const std::string& path) {
  // Every access is type-checked first; this only turns a case that slipped
  // through into the same one-line error instead of a json exception.
  try {
    return read_checked(path);
  } catch (const json::exception& e) {
    fail(path, std::string("unexpected JSON content (") + e.what() + ")");
  }
}

}  // namespace h2o::text

namespace h2o {

std::unique_ptr<Tokenizer> load_hf_tokenizer(const std::string& path) {
  return text::make_bpe_tokenizer(text::read_hf_tokenizer_json(path), path);
}

}  // namespace h2o
