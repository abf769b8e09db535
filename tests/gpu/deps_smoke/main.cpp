// Uses every carried dependency once, as a GoogleTest program, so that running
// it proves each library links and loads. H2O_ASSETS (optional) names the folder
// holding kjv-tok2k.model for the SentencePiece check.
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <simdjson.h>
#include <string>
#ifdef HAVE_SENTENCEPIECE
#include <sentencepiece_processor.h>
#endif
#ifdef HAVE_PCRE2
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#endif
#ifdef HAVE_UTF8PROC
#include <utf8proc.h>
#endif

TEST(DepsSmoke, OpenSslSha256) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  ASSERT_EQ(EVP_Digest("abc", 3, md, &len, EVP_sha256(), nullptr), 1);
  ASSERT_EQ(len, 32u);
  EXPECT_EQ(md[0], 0xba);
  EXPECT_EQ(md[31], 0xad);
}

TEST(DepsSmoke, NlohmannJson) {
  const auto j = nlohmann::json::parse(R"({"a": [1, 2, 3]})");
  EXPECT_EQ(j["a"][2], 3);
}

TEST(DepsSmoke, Simdjson) {
  simdjson::ondemand::parser parser;
  simdjson::padded_string text(std::string(R"({"a": [1, 2, 3]})"));
  auto doc = parser.iterate(text);
  int64_t last = 0;
  for (int64_t v : doc["a"].get_array()) last = v;
  EXPECT_EQ(last, 3);
}

TEST(DepsSmoke, Cli11) {
  CLI::App app{"smoke"};
  int n = 0;
  app.add_option("--n", n);
  const char* argv[] = {"smoke", "--n", "7"};
  app.parse(3, argv);
  EXPECT_EQ(n, 7);
}

#ifdef HAVE_SENTENCEPIECE
TEST(DepsSmoke, SentencePiece) {
  const char* dir = std::getenv("H2O_ASSETS");
  const std::string model = std::string(dir ? dir : ".") + "/kjv-tok2k.model";
  if (!std::filesystem::exists(model)) GTEST_SKIP() << model << " not found";
  sentencepiece::SentencePieceProcessor sp;
  ASSERT_TRUE(sp.Load(model).ok());
  std::vector<int> ids;
  ASSERT_TRUE(sp.Encode("In the beginning God created the heaven and the earth.", &ids).ok());
  EXPECT_GT(ids.size(), 3u);
}
#endif

#ifdef HAVE_PCRE2
TEST(DepsSmoke, Pcre2) {
  int err = 0;
  PCRE2_SIZE off = 0;
  pcre2_code* re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>("\\p{L}+"), PCRE2_ZERO_TERMINATED, PCRE2_UTF, &err, &off, nullptr);
  ASSERT_NE(re, nullptr);
  pcre2_code_free(re);
}
#endif

#ifdef HAVE_UTF8PROC
TEST(DepsSmoke, Utf8proc) { EXPECT_NE(std::string(utf8proc_version()), ""); }
#endif
