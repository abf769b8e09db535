#pragma once
// Encoding a user's text file with a progress line: a 50 MB file takes
// seconds, and a command that says nothing for that long looks hung. The
// file is mapped, and the pages already encoded are given back as the
// encoding moves on, so a long text costs a part's memory, not its size.
#include <memory>
#include <string>
#include <string_view>

#include "core/base/mapped_file.h"
#include "core/text/tokenizer.h"

namespace h2o::cli {

// A text file's bytes: mapped where it is a regular file, else (a pipe: `eval
// --text <(zcat x.gz)`) read whole. Throws Error naming the path.
class TextFile {
 public:
  explicit TextFile(const std::string& path);
  std::string_view text() const { return mapped_ ? std::string_view(reinterpret_cast<const char*>(mapped_->data()), mapped_->size()) : read_; }
  // The mapped pages wholly before `offset` leave resident memory (they would
  // fault back in from the file if read again); nothing for a text read whole.
  void release_before(size_t offset) const;

 private:
  std::shared_ptr<MappedFile> mapped_;
  std::string read_;
  mutable size_t released_ = 0;  // pages before this (page-aligned) offset were given back already
};

// encode_parts(text) to `sink`; for a text of 4 MiB or more, "<what>:
// tokenizing 12.0 of 50.0 MB, 3.1 MB/s" on stderr, rewritten in place on a
// terminal, then left as one line with the total time. With `file`, its pages
// already encoded are given back.
void encode_with_progress(const Tokenizer& tokenizer, std::string_view text, const char* what, const EncodeSink& sink,
                          const TextFile* file = nullptr);

}  // namespace h2o::cli
