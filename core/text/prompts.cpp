#include "core/text/prompts.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "core/base/utf8.h"

namespace h2o {
namespace {

constexpr size_t kMaxLine = 1 << 20;  // a question longer than 1 MiB is not a prompt

// Reads one line (without its '\n') into `line`, at most `max` bytes of it: a
// longer line is reported as such instead of being read whole into memory.
// Returns false at the end of the file; sets `too_long` for an overlong line.
bool read_line(std::istream& in, std::string& line, size_t max, bool& too_long) {
  line.clear();
  too_long = false;
  std::streambuf* buf = in.rdbuf();
  for (;;) {
    const int c = buf->sbumpc();
    if (c == std::char_traits<char>::eof()) return !line.empty();
    if (c == '\n') return true;
    if (line.size() == max) {
      too_long = true;
      return true;
    }
    line.push_back(char(c));
  }
}

}  // namespace

std::vector<Turn> load_mt_bench(const std::string& path, int max_questions) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail(path, "is a folder, not a prompt file");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot open prompt file: ") + std::strerror(errno));
  std::vector<Turn> turns;
  std::string line;
  int line_no = 0, questions = 0;
  bool too_long = false;
  while (read_line(in, line, kMaxLine, too_long)) {
    ++line_no;
    const std::string where = path + ":" + std::to_string(line_no);
    if (too_long) fail(where, "line longer than 1 MiB");
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (!valid_utf8(line)) fail(where, "invalid UTF-8");
    nlohmann::json q;
    try {
      q = nlohmann::json::parse(line);
    } catch (const nlohmann::json::parse_error& e) {
      fail(where, "not valid JSON (byte " + std::to_string(e.byte) + ")");
    } catch (const nlohmann::json::exception& e) {
      // Valid syntax the library still refuses, e.g. a number too large for a
      // double (found by fuzzing: tests/data/regressions/prompts/).
      fail(where, std::string("not usable JSON (") + e.what() + ")");
    }
    if (!q.is_object()) fail(where, "expected a JSON object");
    if (!q.contains("turns")) fail(where, "missing \"turns\" array");
    if (!q["turns"].is_array()) fail(where, "\"turns\" is not an array of strings");
    if (q["turns"].empty()) fail(where, "\"turns\" is empty");
    int id = questions + 1;
    if (q.contains("question_id")) {
      const auto& qid = q["question_id"];
      if (!qid.is_number_integer()) fail(where, "\"question_id\" is not an integer");
      // Unsigned values above INT64_MAX are out of range as well, whatever int64 they read as.
      const int64_t v = qid.get<int64_t>();
      if ((qid.is_number_unsigned() && qid.get<uint64_t>() > uint64_t(INT32_MAX)) || v < 0 || v > INT32_MAX)
        fail(where, "\"question_id\" is out of range");
      id = int(v);
    }
    std::string category;
    if (q.contains("category")) {
      if (!q["category"].is_string()) fail(where, "\"category\" is not a string");
      category = q["category"].get<std::string>();
    }
    int index = 0;
    for (const auto& t : q["turns"]) {
      if (!t.is_string()) fail(where, "turn " + std::to_string(index + 1) + " is not a string");
      std::string text = t.get<std::string>();
      if (text.find_first_not_of(" \t\r\n") == std::string::npos)
        fail(where, "turn " + std::to_string(index + 1) + " is empty");
      turns.push_back({id, category, index++, std::move(text), {}});
    }
    if (++questions == max_questions) break;
  }
  if (in.bad()) fail(path, "read error");
  if (turns.empty()) fail(path, "no questions in prompt file");
  return turns;
}

std::vector<Turn> builtin_prompts() {
  // Written for this project in the style of MT-Bench's categories.
  const char* questions[][3] = {
      {"writing", "Write a short letter to a friend describing a walk along the sea at dawn.",
       "Now rewrite the letter so that every sentence starts with the letter S."},
      {"reasoning", "A farmer has 17 sheep and all but 9 run away. How many are left? Explain your thinking.",
       "Make up a similar puzzle and solve it step by step."},
      {"stem", "Explain in simple words why the sky looks blue during the day and red at sunset.",
       "Suggest a home experiment that shows the same effect."},
      {"humanities", "Summarise the main causes of the invention of the printing press and its effects.",
       "Which of those effects is still visible today? Give two examples."},
  };
  std::vector<Turn> turns;
  int id = 1;
  for (const auto& q : questions) {
    turns.push_back({id, q[0], 0, q[1], {}});
    turns.push_back({id, q[0], 1, q[2], {}});
    ++id;
  }
  return turns;
}

}  // namespace h2o
