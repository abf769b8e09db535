// Pretokenizer on PCRE2 (8-bit code units, UTF-8 subjects).
//
// PCRE2_MATCH_INVALID_UTF lets any bytes through: invalid sequences simply
// never match, instead of failing the whole match. Patterns are JIT-compiled
// where the platform supports it; a match that runs out of JIT stack (a very
// long run of one character class) is retried with the interpreter, which
// keeps its backtracking state on the heap.
#include "core/text/pretokenizer.h"

#include "core/base/error.h"

#ifdef H2O_HAVE_PCRE2
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#endif

namespace h2o::text {

#ifdef H2O_HAVE_PCRE2

namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  if (pcre2_get_error_message(code, buffer, sizeof buffer) < 0) return "PCRE2 error " + std::to_string(code);
  return reinterpret_cast<const char*>(buffer);
}

// Releases PCRE2 objects when they go out of scope.
struct CodeDeleter {
  void operator()(pcre2_code* code) const { pcre2_code_free(code); }
};
struct MatchDataDeleter {
  void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};
using Code = std::unique_ptr<pcre2_code, CodeDeleter>;
using MatchData = std::unique_ptr<pcre2_match_data, MatchDataDeleter>;

// Where the character after `at` starts: past `at` and any continuation bytes.
size_t next_character(std::string_view text, size_t at) {
  ++at;
  while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) ++at;
  return at;
}

}  // namespace

struct Pretokenizer::Impl {
  std::vector<Code> codes;
  std::string source;

  // Appends the words of `text` under `code` to `out`.
  void split_one(const pcre2_code* code, std::string_view text, std::vector<std::string_view>& out) const {
    MatchData data(pcre2_match_data_create_from_pattern(code, nullptr));
    if (!data) fail(source, "out of memory while splitting text");
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    size_t gap_from = 0, at = 0;
    while (at < text.size()) {
      int rc = pcre2_match(code, subject, text.size(), at, 0, data.get(), nullptr);
      if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
        rc = pcre2_match(code, subject, text.size(), at, PCRE2_NO_JIT, data.get(), nullptr);
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc < 0) fail(source, "cannot split text into words (" + pcre2_message(rc) + ")");
      const PCRE2_SIZE* span = pcre2_get_ovector_pointer(data.get());
      const size_t begin = span[0], end = span[1];
      if (end <= begin) {  // an empty match cuts nothing; look again one character on
        at = next_character(text, begin > at ? begin : at);
        continue;
      }
      if (begin > gap_from) out.push_back(text.substr(gap_from, begin - gap_from));
      out.push_back(text.substr(begin, end - begin));
      gap_from = at = end;
    }
    if (gap_from < text.size()) out.push_back(text.substr(gap_from));
  }
};

Pretokenizer::Pretokenizer(const std::vector<std::string>& patterns, std::string source)
    : impl_(std::make_unique<Impl>()) {
  impl_->source = std::move(source);
  for (const std::string& pattern : patterns) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    Code code(pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                            PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error, &offset, nullptr));
    if (!code)
      fail(impl_->source, "its pre-tokenizer pattern does not compile (" + pcre2_message(error) + " at offset " +
                              std::to_string(offset) + ")");
    pcre2_jit_compile(code.get(), PCRE2_JIT_COMPLETE);  // optional: the interpreter is the fallback
    impl_->codes.push_back(std::move(code));
  }
}

Pretokenizer::~Pretokenizer() = default;

std::vector<std::string_view> Pretokenizer::split(std::string_view text) const {
  std::vector<std::string_view> words;
  if (text.empty()) return words;
  words.push_back(text);
  for (const Code& code : impl_->codes) {
    std::vector<std::string_view> finer;
    finer.reserve(words.size() * 2);
    for (const std::string_view word : words) impl_->split_one(code.get(), word, finer);
    words = std::move(finer);
  }
  return words;
}

bool pretokenizer_available() { return true; }

#else  // !H2O_HAVE_PCRE2

struct Pretokenizer::Impl {};

Pretokenizer::Pretokenizer(const std::vector<std::string>& /*patterns*/, std::string source) {
  fail(source, "byte-level BPE vocabularies need PCRE2, which this build lacks (install libpcre2-dev and reconfigure)");
}

Pretokenizer::~Pretokenizer() = default;

std::vector<std::string_view> Pretokenizer::split(std::string_view text) const { return {text}; }

bool pretokenizer_available() { return false; }

#endif

}  // namespace h2o::text
