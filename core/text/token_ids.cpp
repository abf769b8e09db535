#include "core/text/token_ids.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/base/atomic_file.h"
#include "core/base/error.h"

namespace h2o {
namespace {

// Appends the integers of one line; `where` names the place in errors.
void parse_into(const std::string& line, const std::string& where, int vocab_size, std::vector<int>& out) {
  size_t i = 0;
  while (i < line.size()) {
    const unsigned char c = static_cast<unsigned char>(line[i]);
    if (std::isspace(c) || c == ',') {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < line.size() && std::isdigit(static_cast<unsigned char>(line[j]))) ++j;
    if (j == i || (j < line.size() && !std::isspace(static_cast<unsigned char>(line[j])) && line[j] != ','))
      fail(where, "'" + line.substr(i, 20) + "' is not a token id (expected non-negative integers)");
    if (j - i > 9) fail(where, "token id " + line.substr(i, j - i) + " is too large");
    const int id = std::stoi(line.substr(i, j - i));
    if (vocab_size > 0 && id >= vocab_size)
      fail(where, "token id " + std::to_string(id) + " is outside the model's vocabulary (" +
                      std::to_string(vocab_size) + ")");
    out.push_back(id);
    i = j;
  }
}

}  // namespace

std::vector<int> read_token_ids(const std::string& path, int vocab_size) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail(path, "is a folder, not a token-id file");
  std::ifstream in(path);
  if (!in) fail(path, "cannot open token-id file");
  std::vector<int> ids;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) parse_into(line, path + ":" + std::to_string(++line_no), vocab_size, ids);
  if (ids.empty()) fail(path, "no token ids in file");
  return ids;
}

std::vector<int> parse_token_list(const std::string& text, const std::string& what, int vocab_size) {
  std::vector<int> ids;
  parse_into(text, what, vocab_size, ids);
  if (ids.empty()) fail(what, "no token ids given");
  return ids;
}

std::string token_ids_text(const std::vector<int>& ids) {
  std::ostringstream s;
  for (size_t i = 0; i < ids.size(); ++i) s << ids[i] << ((i + 1) % 32 == 0 || i + 1 == ids.size() ? '\n' : ' ');
  return s.str();
}

void write_token_ids(const std::string& path, const std::vector<int>& ids) { write_file_atomic(path, token_ids_text(ids)); }

}  // namespace h2o
