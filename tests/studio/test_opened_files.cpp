// What the app opens of the files handed to it (core/studio/opened_files.h):
// a recording by its first bytes, a model or a tokenizer by its name or as a
// folder, several at once; and its recent models.
#include <gtest/gtest.h>

#include <fstream>

#include "core/studio/opened_files.h"
#include "tests/assets.h"

using namespace h2o;
namespace fs = std::filesystem;

namespace {

struct Files {
  fs::path dir = test::temp_dir("opened-files");
  ~Files() { fs::remove_all(dir); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  }
};

}  // namespace

TEST(OpenedFiles, EachFileByWhatItIs) {
  Files f;
  // A recording whatever its name (a spool, a renamed file); a .jsonl that is not one is no recording.
  EXPECT_EQ(file_role(f.write("run.h2orec.jsonl", R"({"format":"h2o-studio-recording","header":{}})" "\n")),
            FileRole::Recording);
  EXPECT_EQ(file_role(f.write("renamed.txt", R"({"format":"h2o-studio-recording","version":4})")), FileRole::Recording);
  EXPECT_EQ(file_role(f.write("steps.jsonl", R"({"step":0})" "\n")), FileRole::Unknown);
  EXPECT_EQ(file_role(f.write("short.jsonl", R"({"format")")), FileRole::Unknown);
  EXPECT_EQ(file_role(f.write("Model.GGUF", "GGUF")), FileRole::Model);
  EXPECT_EQ(file_role(f.write("stories.bin", "x")), FileRole::Model);
  EXPECT_EQ(file_role(f.write("model.safetensors", "x")), FileRole::Model);
  EXPECT_EQ(file_role(f.write("config.json", "{}")), FileRole::Model);
  EXPECT_EQ(file_role(f.dir.string()), FileRole::Model);  // a Hugging Face folder
  EXPECT_EQ(file_role(f.write("kjv.model", "x")), FileRole::Tokenizer);
  EXPECT_EQ(file_role(f.write("tokenizer.json", "{}")), FileRole::Tokenizer);
  EXPECT_EQ(file_role(f.write("notes.txt", "x")), FileRole::Unknown);
  EXPECT_EQ(file_role((f.dir / "missing.gguf").string()), FileRole::Unknown);
}

TEST(OpenedFiles, AModelWithItsTokenizerOrARecordingAlone) {
  Files f;
  const std::string model = f.write("m.bin", "x"), tokenizer = f.write("t.model", "x"),
                    recording = f.write("r.jsonl", R"({"format":"h2o-studio-recording"})");
  const OpenRequest pair = open_request({tokenizer, model});
  EXPECT_EQ(pair.model, model);
  EXPECT_EQ(pair.tokenizer, tokenizer);
  EXPECT_TRUE(pair.recording.empty());
  EXPECT_TRUE(pair.problem.empty());
  const OpenRequest replay = open_request({model, recording, tokenizer});
  EXPECT_EQ(replay.recording, recording);
  EXPECT_TRUE(replay.model.empty() && replay.tokenizer.empty());
  const OpenRequest alone = open_request({tokenizer});  // goes with the current model
  EXPECT_TRUE(alone.model.empty());
  EXPECT_EQ(alone.tokenizer, tokenizer);
  EXPECT_FALSE(alone.empty());
}

TEST(OpenedFiles, WhatCannotBeOpenedIsNamedWithWhatCan) {
  Files f;
  const std::string notes = f.write("notes.txt", "x"), model = f.write("m.gguf", "x");
  const OpenRequest r = open_request({notes, model, (f.dir / "gone.bin").string()});
  EXPECT_EQ(r.model, model);  // the usable one still opens
  const std::string said = notes + ": not a model, tokenizer or recording (and 1 more) — open a model (.gguf";
  EXPECT_EQ(r.problem.rfind(said, 0), 0u)
      << r.problem;
  const OpenRequest gone = open_request({(f.dir / "gone.bin").string()});
  EXPECT_TRUE(gone.empty());
  EXPECT_NE(gone.problem.find("gone.bin: no such file or folder — "), std::string::npos) << gone.problem;
}

TEST(OpenedFiles, RecentModelsNewestFirstWithoutRepeatsAndBounded) {
  std::vector<RecentModel> recent;
  recent = remember_model(recent, {"a.gguf", ""});
  recent = remember_model(recent, {"b.bin", "b.model"});
  recent = remember_model(recent, {"a.gguf", ""});
  EXPECT_EQ(recent, (std::vector<RecentModel>{{"a.gguf", ""}, {"b.bin", "b.model"}}));
  recent = remember_model(recent, {"b.bin", ""});  // another tokenizer: another entry
  EXPECT_EQ(recent.size(), 3u);
  for (int i = 0; i < 20; ++i) recent = remember_model(recent, {"m" + std::to_string(i), ""}, 8);
  EXPECT_EQ(recent.size(), 8u);
  EXPECT_EQ(recent.front().model, "m19");
}
