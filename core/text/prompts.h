#pragma once
// The prompt stream: MT-Bench questions in FastChat's question.jsonl format
// ({"question_id", "category", "turns": [...]}), flattened into turns, or the
// few built-in prompts used when no file is given.
#include <string>
#include <vector>

namespace h2o {

struct Turn {
  int question_id = 0;
  std::string category;
  int turn_index = 0;  // 0-based turn within its question
  std::string text;
  std::vector<int> ids;  // pre-tokenized prompt, fed as is (no template, no BOS added)
  // A passage planted in the stream (the app's needle, Engine::plant): its
  // ids fed as they are, and no answer follows; the next turn comes next.
  bool needle = false;
};

// Reads every turn of every question, in file order. Throws Error
// ("<path>:<line>: ...") for a malformed line, a missing or wrong-typed
// field, an empty turn, invalid UTF-8, or a file with no questions.
std::vector<Turn> load_mt_bench(const std::string& path, int max_questions = 0);

// A handful of MT-Bench-style prompts compiled in, so the demo always runs.
std::vector<Turn> builtin_prompts();

// The StreamingLLM demo's chat template, used when a model names none
// (core/text/chat_template.h): "{turn}" stands for the turn's text.
inline constexpr const char* kDefaultTemplate = "USER: {turn}\n\nASSISTANT: ";

}  // namespace h2o
