#include "prompts.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "error.h"

namespace h2o {
namespace {

constexpr size_t kMaxLine = 1 << 20;  // a question longer than 1 MiB is not a prompt

bool valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (int k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return false;
    i += len;
  }
  return true;
}

}  // namespace

std::vector<Turn> load_mt_bench(const std::string& path, int max_questions) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open prompt file");
  std::vector<Turn> turns;
  std::string line;
  int line_no = 0, questions = 0;
  while (std::getline(in, line)) {
    ++line_no;
    const std::string where = path + ":" + std::to_string(line_no);
    if (line.size() > kMaxLine) fail(where, "line longer than 1 MiB");
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (!valid_utf8(line)) fail(where, "invalid UTF-8");
    nlohmann::json q;
    try {
      q = nlohmann::json::parse(line);
    } catch (const nlohmann::json::parse_error& e) {
      fail(where, "not valid JSON (byte " + std::to_string(e.byte) + ")");
    }
    if (!q.is_object()) fail(where, "expected a JSON object");
    if (!q.contains("turns") || !q["turns"].is_array()) fail(where, "missing \"turns\" array");
    if (q["turns"].empty()) fail(where, "\"turns\" is empty");
    int id = questions + 1;
    if (q.contains("question_id")) {
      if (!q["question_id"].is_number_integer()) fail(where, "\"question_id\" is not an integer");
      id = q["question_id"].get<int>();
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
      turns.push_back({id, category, index++, std::move(text)});
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
    turns.push_back({id, q[0], 0, q[1]});
    turns.push_back({id, q[0], 1, q[2]});
    ++id;
  }
  return turns;
}

std::string apply_template(const std::string& tmpl, const std::string& turn) {
  std::string out = tmpl;
  const size_t at = out.find("{turn}");
  if (at == std::string::npos) return out + turn;
  out.replace(at, 6, turn);
  return out;
}

}  // namespace h2o
