#pragma once
// Token-id files: integers separated by white space or commas (what
// `h2o-cli sample` writes and `eval --ids` reads).
#include <string>
#include <vector>

namespace h2o {

// Throws Error("<path>:<line>: ...") for anything that is not a non-negative
// integer below `vocab_size` (when > 0), or for an empty file.
std::vector<int> read_token_ids(const std::string& path, int vocab_size = 0);
// Parses "1,2,3" (the --prompt-ids flag); `what` names the flag in errors.
std::vector<int> parse_token_list(const std::string& text, const std::string& what, int vocab_size = 0);
void write_token_ids(const std::string& path, const std::vector<int>& ids);  // atomic
// The text write_token_ids writes: 32 ids a line, space-separated.
std::string token_ids_text(const std::vector<int>& ids);

}  // namespace h2o
