// Every class of bad input through the real h2o-cli: a bad flag value, a
// missing, truncated or corrupt file, a wrong tokenizer, malformed prompts or
// token ids, an unwritable --out. Each must end the same way: a non-zero exit
// (not a signal), exactly one line on stderr naming the flag or file, and no
// file left in the output folder.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/text/tokenizer.h"
#include "tests/assets.h"
#include "tests/cli_runner.h"
#include "tests/model_writers.h"
#include "tests/text/bpe_writers.h"

using namespace h2o;
using namespace h2o::test;
namespace fs = std::filesystem;

namespace {

struct BadInput {
  const char* name;    // the class of bad input
  std::string args;    // h2o-cli arguments; {dir} is the test's folder, {out} its output folder
  std::string needle;  // what the one line must name (flag or file)
};

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// The input files the cases refer to, in `dir`.
void write_inputs(const fs::path& dir) {
  const ModelArrays m = random_arrays(tiny_config(), 7, false);
  write_llama2c(dir / "tiny.bin", m);
  auto bytes = llama2c_bytes(m);
  bytes.resize(bytes.size() / 2);
  write_file(dir / "truncated.bin", bytes);
  std::vector<uint8_t> header(bytes.begin(), bytes.begin() + 28);
  int32_t negative_layers = -3;
  std::memcpy(header.data() + 8, &negative_layers, 4);
  write_file(dir / "bad-header.bin", header);
  write_gguf(dir / "tiny.gguf", m);
  auto gguf = llama_gguf(m).build();
  gguf[4] = 9;  // version 9
  write_file(dir / "bad-version.gguf", gguf);
  gguf = llama_gguf(m).build();
  gguf.resize(gguf.size() - 100);
  write_file(dir / "truncated.gguf", gguf);
  gguf = llama_gguf(m).build();
  gguf[3] = 'X';  // "GGUX"
  write_file(dir / "bad-magic.gguf", gguf);
  // Quantised GGUF: rows of 32 are one Q8_0 block each; then one tensor of a
  // type this reader does not know, one whose rows are not whole Q4_K blocks,
  // and the whole file cut short inside the last tensor.
  ModelConfig qc = tiny_config();
  qc.dim = 32;
  qc.hidden_dim = 64;
  const ModelArrays qm = random_arrays(qc, 8, false);
  llama_gguf(qm, {DType::Q8_0}).write(dir / "q8_0.gguf");
  GgufWriter q = llama_gguf(qm, {DType::Q8_0});
  q.tensor("blk.0.attn_q.weight")->type = 16;  // IQ2_XXS
  q.write(dir / "iq2_xxs.gguf");
  q = llama_gguf(qm, {DType::Q8_0});
  q.tensor("blk.0.attn_q.weight")->type = uint32_t(DType::Q4_K);
  q.write(dir / "q4_k-rows-of-32.gguf");
  gguf = llama_gguf(qm, {DType::Q8_0}).build();
  gguf.resize(gguf.size() - 700);
  write_file(dir / "q8_0-truncated.gguf", gguf);
  // A tensor's type field changed with its data left as written: Q4_0 read as
  // Q8_0 (larger: it overlaps the next tensor), two tensors at one offset,
  // and Q4_K super-blocks read as Q4_0 blocks (the same size: scales that are no numbers).
  q = llama_gguf(qm, {DType::Q4_0});
  q.tensor("blk.0.attn_q.weight")->type = uint32_t(DType::Q8_0);
  q.write(dir / "retyped.gguf");
  q = llama_gguf(qm, {DType::Q4_0});
  q.tensor("blk.0.attn_k.weight")->offset = 0;
  q.write(dir / "same-offset.gguf");
  ModelConfig kc = qc;
  kc.dim = kc.hidden_dim = 256;
  q = llama_gguf(random_arrays(kc, 9, false), {DType::Q4_K});
  q.tensor("blk.0.attn_q.weight")->type = uint32_t(DType::Q4_0);
  q.write(dir / "q4_k-as-q4_0.gguf");
  write_hf_model(dir / "hf", m);
  write_text(dir / "hf" / "config.json", R"({"hidden_size": 16, "num_hidden_layers": "two"})");
  // A header nested far deeper than any safetensors header; a tokenizer.json
  // beside the weights with more pieces (275) than the model's 32.
  write_hf_model(dir / "hf-deep", m);
  const std::string deep = "{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  std::vector<uint8_t> deep_file(8);
  const uint64_t deep_size = deep.size();
  std::memcpy(deep_file.data(), &deep_size, 8);
  deep_file.insert(deep_file.end(), deep.begin(), deep.end());
  write_file(dir / "hf-deep" / "model.safetensors", deep_file);
  write_hf_model(dir / "hf-tokenizer", m);
  write_json(dir / "hf-tokenizer" / "tokenizer.json", tiny_tokenizer_json());
  // 64 pieces for a model with 32 rows: the wrong tokenizer.
  EmbeddedVocab vocab;
  vocab.model = "llama";
  vocab.pieces = tiny_pieces(64);
  const std::string proto = sentencepiece_model_proto(vocab, 1, 2, "test");
  write_text(dir / "big.model", proto);
  write_text(dir / "garbage.model", std::string(1000, '\x07'));
  write_text(dir / "empty.model", "");

  // Byte-level BPE vocabularies (vocabulary-only GGUF files, tokenizer.json).
  tiny_bpe_gguf().write(dir / "vocab-only.gguf");
  EmbeddedVocab bpe = tiny_bpe_vocab();
  bpe.merges[1] = "ll";
  tiny_bpe_gguf(bpe).write(dir / "bad-merge.gguf");
  bpe = tiny_bpe_vocab();
  bpe.merges[1] = "l zz";
  tiny_bpe_gguf(bpe).write(dir / "unknown-piece.gguf");
  tiny_bpe_gguf("falcon").write(dir / "unknown-pre.gguf");
  nlohmann::json wordpiece = tiny_tokenizer_json();
  wordpiece["model"]["type"] = "WordPiece";
  write_json(dir / "wordpiece.json", wordpiece);
  write_text(dir / "broken.json", "{\"model\": {\"type\": \"BPE\", ");

  write_text(dir / "truncated.jsonl", "{\"turns\": [\"fine\"]}\n{\"turns\": [\"cut");
  write_text(dir / "no-turns.jsonl", "{\"question_id\": 1, \"category\": \"x\"}\n");
  write_text(dir / "turns-not-array.jsonl", "{\"turns\": \"one\"}\n");
  write_text(dir / "empty-turns.jsonl", "{\"turns\": []}\n");
  write_text(dir / "blank-turn.jsonl", "{\"turns\": [\"  \"]}\n");
  write_text(dir / "number-turn.jsonl", "{\"turns\": [42]}\n");
  write_text(dir / "string-id.jsonl", "{\"question_id\": \"7\", \"turns\": [\"a\"]}\n");
  write_text(dir / "huge-id.jsonl", "{\"question_id\": 99999999999, \"turns\": [\"a\"]}\n");
  write_text(dir / "bad-utf8.jsonl", "{\"turns\": [\"caf\xc3\x28\"]}\n");
  write_text(dir / "array.jsonl", "[1, 2]\n");
  write_text(dir / "empty.jsonl", "\n\n");
  write_text(dir / "huge-line.jsonl", "{\"turns\": [\"" + std::string(size_t(1) << 21, 'a') + "\"]}\n");

  write_text(dir / "words.ids", "1 2 three\n");
  write_text(dir / "negative.ids", "1 -2\n");
  write_text(dir / "out-of-vocab.ids", "1 2 32\n");
  write_text(dir / "huge.ids", "1 2 12345678901234\n");
  write_text(dir / "empty.ids", " \n,\n");
  write_text(dir / "fine.ids", "1 5 9 13 2 7 7 7\n");
  write_text(dir / "one.ids", "5\n");
  write_text(dir / "empty.txt", "");
  write_text(dir / "bom.txt", "\xEF\xBB\xBF");
  write_text(dir / "a-file", "not a folder\n");
}

const std::string kModel = "--model {dir}/tiny.bin";

std::vector<BadInput> cases() {
  const std::string s = "stream --quiet --out {out} " + kModel + " ";
  const std::string e = "eval --out {out} " + kModel + " --ids {dir}/fine.ids ";
  const std::string g = "generate " + kModel + " --max-new-tokens 2 ";
  return {
      // numeric flags
      {"budget 0", s + "--budget 0", "--budget"},
      {"budget negative", s + "--budget -8", "--budget"},
      {"sinks fill the budget", s + "--budget 4 --sinks 4", "--sinks"},
      {"sinks beyond the budget", s + "--budget 4 --sinks 9", "--sinks"},
      {"sinks negative", s + "--sinks -1", "--sinks"},
      {"H2O recent 0", s + "--policies h2o --heavy 10 --recent 0", "--recent"},
      {"H2O heavy negative", s + "--policies h2o --heavy -1", "--heavy"},
      {"StreamingLLM window 0", s + "--policies streaming --window 0", "--window"},
      {"slack negative", s + "--slack -1", "--slack"},
      {"kv bits not 16, 8, 4 or 2", s + "--kv-bits 3", "--kv-bits"},
      {"kv bits given a list", s + "--kv-bits 16,4,2", "--kv-bits: '16,4,2' is a list"},
      {"kv group not dividing head_dim", s + "--kv-bits 4 --kv-group 3 --kv-residual 6", "--kv-group"},
      {"kv residual not a multiple of the group", s + "--kv-bits 4 --kv-residual 40", "--kv-residual"},
      {"kv bits with rolling positions", s + "--kv-bits 2 --position-rolling", "--kv-bits"},
      {"kv group without kv bits", s + "--kv-group 16", "--kv-group"},
      {"kv precision of a pane", s + "--policies full,h2o@3bit", "--policies"},
      {"kv bits in eval's sweep", e + "--kv-sweep 16,5", "--kv-sweep: '5' is not a precision of the sweep"},
      {"kv bits k4 in eval's sweep", e + "--kv-sweep k4", "--kv-sweep: 'k4' is not a precision of the sweep: give 32"},
      {"kv bits k4 in eval", e + "--kv-bits k4", "--kv-bits: 'k4': bits must be 16, 8, 4 or 2"},
      {"kv limit negative", s + "--kv-limit -1", "--kv-limit"},
      {"threads negative", s + "--threads -2", "--threads"},
      {"threads not a number", s + "--threads two", "--threads"},
      {"threads beyond the machine", s + "--threads 10000", "--threads: 10000 is more than 2 per CPU this process may use"},
      {"budget beyond a KV head", s + "--budget 2147483647",
       "--budget: 2147483647 is more than the tokens a KV head may hold"},
      {"window beyond a KV head", s + "--policies streaming --window 2147483647", "--window: 2147483647 is more"},
      {"slack beyond a KV head", s + "--slack 2147483647", "--slack: 2147483647 is more"},
      {"budget beyond memory", "stream --quiet --out {out} --model synthetic:stories15M --budget 16777216",
       "--budget: caches of up to 16777216 tokens per KV head"},
      {"seed negative", s + "--seed -1", "--seed: must be an integer from 0 to 18446744073709551615, got '-1'"},
      {"seed above 2^64 - 1", s + "--seed 18446744073709551616", "--seed: must be an integer from 0 to"},
      {"max-new-tokens 0", s + "--max-new-tokens 0", "--max-new-tokens"},
      {"max-new-tokens negative", s + "--max-new-tokens -5", "--max-new-tokens"},
      {"temperature negative", s + "--temperature -0.5", "--temperature"},
      {"temperature NaN", s + "--temperature nan", "--temperature"},
      {"top-p 0", s + "--top-p 0", "--top-p"},
      {"top-p above 1", s + "--top-p 1.5", "--top-p"},
      {"prefill-chunk 0", s + "--prefill-chunk 0", "--prefill-chunk"},
      {"questions negative", s + "--questions -1", "--questions"},
      {"unknown policy", s + "--policies full,lru", "--policies"},
      {"no policy", s + "--policies ,", "--policies"},
      {"unknown backend", s + "--backend tpu", "--backend"},
      {"CUDA backend not built", s + "--backend cuda", "--backend"},
      {"precision on CPU", s + "--precision f16", "--precision"},
      {"CPU threads on cuda-sim", g + "--prompt-ids 1 --backend cuda-sim --threads 2",
       "--threads: cuda-sim emulates the device on one CPU thread"},
      {"precision cuda-sim cannot store", g + "--prompt-ids 1 --backend cuda-sim --precision q8_0",
       "--precision: expected f32|f16|bf16|native, got 'q8_0'"},
      // In the table's words (core/flags/run_flags.h), as every front end refuses it.
      {"info on an unknown backend", "info " + kModel + " --backend tpu", "--backend: expected cpu|cuda|cuda-sim, got 'tpu'"},
      {"info at an unknown precision", "info " + kModel + " --backend cpu --precision q8_0",
       "--precision: expected f32|f16|bf16|native, got 'q8_0'"},
      {"unknown flag", s + "--bogus 1", "--bogus"},
      {"eval budget 0", e + "--budgets 0", "--budgets"},
      {"eval budget not above sinks", e + "--budgets 4,64", "--budgets"},
      {"eval budgets not numbers", e + "--budgets 32,big", "--budgets"},
      {"eval max-tokens negative", e + "--max-tokens -1", "--max-tokens"},
      {"eval max-tokens 1", e + "--max-tokens 1", "--max-tokens: must be 0 (all) or at least 2"},
      {"eval budgets beyond a KV head", e + "--budgets 99999999999",
       "--budgets: budget 99999999999 is above 16777216"},
      {"sample tokens 1", "sample " + kModel + " --tokens 1 --out {out}/ids.txt", "--tokens"},
      {"prompt-ids empty", g + "--prompt-ids ,", "--prompt-ids"},
      {"prompt-ids not numbers", g + "--prompt-ids 1,x", "--prompt-ids"},
      {"prompt-ids out of vocabulary", g + "--prompt-ids 1,32", "--prompt-ids"},
      // model files
      {"model missing", "stream --out {out} --model {dir}/nope.bin", "nope.bin"},
      {"model is a folder without weights", "stream --out {out} --model {out}/..", "{out}/.."},
      {"llama2.c truncated", "stream --out {out} --model {dir}/truncated.bin", "truncated.bin"},
      {"llama2.c negative header field", "stream --out {out} --model {dir}/bad-header.bin", "bad-header.bin"},
      {"GGUF bad version", "stream --out {out} --model {dir}/bad-version.gguf", "bad-version.gguf"},
      {"GGUF bad magic", "stream --out {out} --model {dir}/bad-magic.gguf", "bad-magic.gguf: not a GGUF file"},
      {"GGUF truncated", "stream --out {out} --model {dir}/truncated.gguf", "truncated.gguf"},
      {"GGUF unknown quantisation type", "stream --out {out} --model {dir}/iq2_xxs.gguf",
       "iq2_xxs.gguf: tensor blk.0.attn_q.weight has type IQ2_XXS (16)"},
      {"GGUF rows not whole blocks", "stream --out {out} --model {dir}/q4_k-rows-of-32.gguf",
       "q4_k-rows-of-32.gguf: tensor blk.0.attn_q.weight has rows of 32 elements, not whole blocks of Q4_K"},
      {"GGUF quantised tensor cut short", "stream --out {out} --model {dir}/q8_0-truncated.gguf",
       "q8_0-truncated.gguf: tensor"},
      {"GGUF tensor retyped to a larger type", "stream --out {out} --model {dir}/retyped.gguf",
       "retyped.gguf: tensors blk.0.attn_q.weight and "},
      {"GGUF two tensors at one offset", "stream --out {out} --model {dir}/same-offset.gguf",
       "same-offset.gguf: tensors "},
      {"GGUF tensor retyped to a type of the same size", "stream --out {out} --model {dir}/q4_k-as-q4_0.gguf",
       "q4_k-as-q4_0.gguf: tensor blk.0.attn_q.weight (Q4_0): block "},
      {"safetensors header nested deep", "stream --out {out} --model {dir}/hf-deep",
       "hf-deep/model.safetensors: invalid JSON: nested deeper than 64 levels"},
      {"safetensors config wrong type", "stream --out {out} --model {dir}/hf", "config.json"},
      {"synthetic unknown shape", "stream --out {out} --model synthetic:stories1T", "synthetic:stories1T"},
      {"synthetic bad vocab", "stream --out {out} --model synthetic:stories260K:vocab=-5", "vocab"},
      // tokenizer files
      {"tokenizer missing", s + "--tokenizer {dir}/nope.model", "nope.model"},
      {"tokenizer is a folder", s + "--tokenizer {dir}", "{dir}"},
      {"tokenizer empty", s + "--tokenizer {dir}/empty.model", "empty.model"},
      {"tokenizer garbage", s + "--tokenizer {dir}/garbage.model", "garbage.model"},
      {"tokenizer is a model checkpoint", s + "--tokenizer {dir}/tiny.bin", "tiny.bin"},
      {"tokenizer vocabulary larger than the model's", s + "--tokenizer {dir}/big.model", "big.model"},
      {"tokenizer.json beside the weights larger than the model's", "stream --out {out} --model {dir}/hf-tokenizer",
       "hf-tokenizer/tokenizer.json: has 275 pieces but the model's vocabulary has 32"},
      {"tokenizer.json of a WordPiece model", s + "--tokenizer {dir}/wordpiece.json",
       "wordpiece.json: model type \"WordPiece\" is not supported"},
      {"vocabulary-only GGUF as a model", "stream --out {out} --model {dir}/vocab-only.gguf",
       "vocab-only.gguf: has no tensors"},
      // tokenize
      {"tokenize GGUF merge without a space", "tokenize --tokenizer {dir}/bad-merge.gguf hello",
       "bad-merge.gguf: tokenizer.ggml.merges[1]"},
      {"tokenize GGUF merge naming an unknown piece", "tokenize --tokenizer {dir}/unknown-piece.gguf hello",
       "unknown-piece.gguf"},
      {"tokenize unknown pre-tokenizer", "tokenize --tokenizer {dir}/unknown-pre.gguf hello",
       "unknown-pre.gguf: tokenizer.ggml.pre \"falcon\""},
      {"tokenize tokenizer.json not JSON", "tokenize --tokenizer {dir}/broken.json hello", "broken.json"},
      {"tokenize tokenizer missing", "tokenize --tokenizer {dir}/nope.json hello", "nope.json"},
      {"tokenize without a tokenizer", "tokenize hello", "--tokenizer"},
      {"tokenize without text", "tokenize --tokenizer {dir}/vocab-only.gguf", "--text-file"},
      {"tokenize text and text file", "tokenize --tokenizer {dir}/vocab-only.gguf --text-file {dir}/fine.ids hi",
       "--text-file"},
      {"tokenize text file missing", "tokenize --tokenizer {dir}/vocab-only.gguf --text-file {dir}/nope.txt",
       "nope.txt"},
      // prompt files
      {"prompts missing", s + "--prompts {dir}/nope.jsonl", "nope.jsonl"},
      {"prompts is a folder", s + "--prompts {dir}", "{dir}"},
      {"prompts truncated line", s + "--prompts {dir}/truncated.jsonl", "truncated.jsonl:2"},
      {"prompts without turns", s + "--prompts {dir}/no-turns.jsonl", "no-turns.jsonl:1"},
      {"prompts turns not an array", s + "--prompts {dir}/turns-not-array.jsonl",
       "turns-not-array.jsonl:1: \"turns\" is not an array"},
      {"prompts empty turns", s + "--prompts {dir}/empty-turns.jsonl", "empty-turns.jsonl:1"},
      {"prompts blank turn", s + "--prompts {dir}/blank-turn.jsonl", "blank-turn.jsonl:1"},
      {"prompts turn not a string", s + "--prompts {dir}/number-turn.jsonl", "number-turn.jsonl:1"},
      {"prompts question_id a string", s + "--prompts {dir}/string-id.jsonl", "string-id.jsonl:1"},
      {"prompts question_id out of range", s + "--prompts {dir}/huge-id.jsonl", "huge-id.jsonl:1"},
      {"prompts invalid UTF-8", s + "--prompts {dir}/bad-utf8.jsonl", "bad-utf8.jsonl:1"},
      {"prompts line not an object", s + "--prompts {dir}/array.jsonl", "array.jsonl:1"},
      {"prompts no questions", s + "--prompts {dir}/empty.jsonl", "empty.jsonl"},
      {"prompts line over 1 MiB", s + "--prompts {dir}/huge-line.jsonl", "huge-line.jsonl:1"},
      // token-id files
      {"ids missing", "eval --out {out} " + kModel + " --ids {dir}/nope.ids", "nope.ids"},
      {"ids is a folder", "eval --out {out} " + kModel + " --ids {dir}", "{dir}"},
      {"ids not numbers", "eval --out {out} " + kModel + " --ids {dir}/words.ids", "words.ids:1"},
      {"ids negative", "eval --out {out} " + kModel + " --ids {dir}/negative.ids", "negative.ids:1"},
      {"ids out of vocabulary", "eval --out {out} " + kModel + " --ids {dir}/out-of-vocab.ids", "out-of-vocab.ids:1"},
      {"ids too large", "eval --out {out} " + kModel + " --ids {dir}/huge.ids", "huge.ids:1"},
      {"ids none", "eval --out {out} " + kModel + " --ids {dir}/empty.ids", "empty.ids"},
      {"eval text missing", "eval --out {out} " + kModel + " --text {dir}/nope.txt", "nope.txt"},
      {"eval text empty", "eval --out {out} " + kModel + " --text {dir}/empty.txt", "empty.txt: is empty"},
      {"eval text only a byte-order mark", "eval --out {out} " + kModel + " --text {dir}/bom.txt",
       "bom.txt: holds only a UTF-8 byte-order mark"},
      {"ids one id", "eval --out {out} " + kModel + " --ids {dir}/one.ids", "one.ids: gives 1 token"},
      // outputs
      {"out under a file", "stream --quiet --max-new-tokens 2 " + kModel + " --out {dir}/a-file/logs", "a-file"},
      {"out in /proc", "stream --quiet --max-new-tokens 2 " + kModel + " --out /proc/h2o-logs", "/proc/h2o-logs"},
      {"eval csv unwritable", e + "--csv /proc/h2o-eval.csv", "/proc/h2o-eval.csv"},
      {"sample out under a file", "sample " + kModel + " --tokens 4 --out {dir}/a-file/ids.txt", "a-file"},
      {"eval csv is a folder", e + "--csv {dir}", "{dir}: is a folder"},
      {"eval csv is a device", e + "--csv /dev/null", "/dev/null: is not a regular file"},
      {"eval csv is one of the run's logs", e + "--csv {out}/steps.csv", "{out}/steps.csv: is one of this run's own files"},
      {"sample out is a folder", "sample " + kModel + " --tokens 4 --out {dir}", "{dir}: is a folder"},
      {"convert out is a folder", "convert " + kModel + " --type f32 --out {dir}", "{dir}: is a folder"},
  };
}

std::string expand(std::string s, const fs::path& dir, const fs::path& out) {
  for (auto [key, value] : {std::pair<std::string, std::string>{"{dir}", dir.string()}, {"{out}", out.string()}})
    for (size_t at; (at = s.find(key)) != std::string::npos;) s.replace(at, key.size(), value);
  return s;
}

// Files anywhere under `dir` (none when it does not exist).
std::vector<std::string> files_under(const fs::path& dir) {
  std::vector<std::string> found;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return found;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec))
    if (!e.is_directory()) found.push_back(e.path().string());
  return found;
}

// With H2O_BAD_INPUT_TABLE=<file>, each case appends a Markdown row to it
// (class | command | message | exit code | output left): the table of the
// reliability notes, regenerated by running this suite.
void append_table_row(const BadInput& c, const CliResult& r, bool clean, const fs::path& dir, const fs::path& out) {
  const char* file = std::getenv("H2O_BAD_INPUT_TABLE");
  if (!file || !*file) return;
  std::string command = "h2o-cli " + expand(c.args, "in", "out");
  std::string message = r.err.substr(0, r.err.find('\n'));
  // The test's temporary folders read as in/ and out/, as in the command.
  for (auto [path, name] : {std::pair{out.string(), std::string("out")}, std::pair{dir.string(), std::string("in")}})
    for (size_t at; (at = message.find(path)) != std::string::npos;) message.replace(at, path.size(), name);
  for (std::string* text : {&command, &message})
    for (size_t at = 0; (at = text->find('|', at)) != std::string::npos; at += 2) text->replace(at, 1, "\\|");
  std::ofstream(file, std::ios::app) << "| " << c.name << " | `" << command << "` | `" << message << "` | "
                                     << r.exit_code << " | " << (clean ? "none" : "FILES LEFT") << " |\n";
}

class BadInputCli : public ::testing::TestWithParam<BadInput> {
 protected:
  static void SetUpTestSuite() {
    root_ = temp_dir("bad-input");
    fs::create_directories(root_ / "inputs");
    write_inputs(root_ / "inputs");
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }
  static fs::path root_;
};
fs::path BadInputCli::root_;

TEST_P(BadInputCli, OneLineNonZeroExitNoOutput) {
  const BadInput& c = GetParam();
  const fs::path dir = root_ / "inputs";
  const fs::path out = root_ / "out";
  fs::create_directories(out);
  const std::string args = expand(c.args, dir, out);
  const std::string needle = expand(c.needle, dir, out);
  const CliResult r = run_cli(args);
  SCOPED_TRACE(args);
  // A signal (a crash, an abort) reads as 128 + its number through the shell.
  EXPECT_GT(r.exit_code, 0);
  EXPECT_LT(r.exit_code, 128) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << "stderr does not name " << needle << ": " << r.err;
  EXPECT_EQ(r.err.find("terminate"), std::string::npos) << r.err;
  const bool clean = files_under(out).empty();
  EXPECT_TRUE(clean) << "left behind: " << files_under(out).front();
  append_table_row(c, r, clean, dir, out);
  fs::remove_all(out);
}

// The control for the quantised cases: the same file, whole, runs.
TEST_F(BadInputCli, TheIntactQuantisedFileRuns) {
  const fs::path dir = root_ / "inputs";
  const CliResult r = run_cli(expand("generate --model {dir}/q8_0.gguf --prompt-ids 1,2 --max-new-tokens 2 --print-ids", dir, dir));
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

std::string case_name(const ::testing::TestParamInfo<BadInput>& info) {
  std::string name = info.param.name;
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Cases, BadInputCli, ::testing::ValuesIn(cases()), case_name);

}  // namespace
