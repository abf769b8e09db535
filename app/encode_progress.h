#pragma once
// Encoding a user's text file with a progress line: a 50 MB file takes
// seconds, and a command that says nothing for that long looks hung.
#include <string>
#include <vector>

#include "core/text/tokenizer.h"

namespace h2o::cli {

// tokenizer.encode(text), a part at a time (encode_in_parts); for a text of
// 4 MiB or more, "<what>: tokenizing 12.0 of 50.0 MB, 3.1 MB/s" on stderr,
// rewritten in place on a terminal, then left as one line with the total time.
std::vector<int> encode_with_progress(const Tokenizer& tokenizer, const std::string& text, const char* what);

}  // namespace h2o::cli
