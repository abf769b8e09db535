// h2o-cli tokenize: the token ids of a text under a tokenizer file.
#include "app/cli_command.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <array>
#include <optional>
#include <span>

#include "app/encode_progress.h"
#include "core/base/error.h"
#include "core/runtime/engine.h"

namespace h2o::cli {

int run_tokenize(CLI::App* sub, const TokenizeFlags& tf) {
  const bool has_text = sub->count("text") > 0, has_file = sub->count("--text-file") > 0;
  if (has_text == has_file) fail("--text-file", "give either TEXT or --text-file PATH, not both or neither");
  // A file is mapped and given back as it is encoded; the ids are printed a part at a time:
  // a 47 MB text held itself and its 13.6 million ids (336 MB at peak), now about one part.
  std::optional<cli::TextFile> file;
  if (has_file) file.emplace(tf.text_file);
  const std::string_view text = file ? file->text() : std::string_view(tf.text);
  const auto tokenizer = load_tokenizer(tf.tokenizer);
  bool first = true;
  const auto print = [&](std::span<const int> ids) {
    for (int id : ids) std::cout << (std::exchange(first, false) ? "" : " ") << id;
    return true;
  };
  if (!tf.no_bos && tokenizer->adds_bos()) print(std::array<int, 1>{tokenizer->bos_id()});
  if (tf.specials) print(tokenizer->encode_with_specials(std::string(text)));
  else cli::encode_with_progress(*tokenizer, text, "tokenize", print, file ? &*file : nullptr);
  std::cout << "\n";
  return 0;
}

CLI::App* add_tokenize(CLI::App& app, TokenizeFlags& tf) {
  CLI::App* tokenize = app.add_subcommand("tokenize", "print the token ids of a text, space-separated, on one line");
  tokenize->add_option("--tokenizer", tf.tokenizer,
                       "SentencePiece .model, GGUF (its vocabulary; a vocabulary-only file will do) or tokenizer.json")
      ->required();
  tokenize->add_option("text", tf.text, "the text (or give --text-file)");
  tokenize->add_option("--text-file", tf.text_file, "read the text from this file, byte for byte");
  tokenize->add_flag("--no-bos", tf.no_bos,
                     "never put BOS first. Without it BOS comes first only when the vocabulary asks for it, as in "
                     "llama.cpp: a GGUF's tokenizer.ggml.add_bos_token, else yes for SentencePiece and Llama-3, no "
                     "for Qwen2; a tokenizer.json's add_bos_token (tokenizer_config.json) or post-processor");
  tokenize->add_flag("--specials", tf.specials,
                     "recognise special tokens' texts (<|eot_id|>, <|im_start|>, <s>) as those tokens, as chat "
                     "templates need; by default they are plain text");
  return tokenize;
}

}  // namespace h2o::cli
