// The policy units: each kind's plain EvictionRule, budget splits (and their
// one-line errors), descriptions and the one JSON layout, for every kind in
// the registry.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "core/base/error.h"
#include "core/policy/fate.h"
#include "core/policy/policy.h"

#include "tests/error_helpers.h"

using namespace h2o;
using h2o::test::error_of;

TEST(PolicyUnits, EveryKindIsRegisteredWithItsOwnNameTitleAndColour) {
  std::set<std::string> names, colours;
  for (const PolicyUnit* unit : policy_units()) {
    EXPECT_TRUE(names.insert(std::string(unit->name)).second) << unit->name;
    EXPECT_TRUE(colours.insert(std::string(unit->color)).second) << unit->name;
    EXPECT_FALSE(unit->title.empty());
    EXPECT_FALSE(unit->description.empty());
    EXPECT_EQ(&policy_unit(unit->name), unit);
  }
  EXPECT_EQ(names, (std::set<std::string>{"full", "streaming", "h2o", "tova"}));
  EXPECT_EQ(policy_names(), "full, streaming, h2o or tova");
  EXPECT_EQ(PolicyConfig().name(), "full");
  EXPECT_EQ(policy_unit("streamingllm").name, "streaming");
  EXPECT_EQ(error_of([] { policy_unit("lru", "--policies"); }),
            "--policies: unknown policy 'lru' (expected full, streaming, h2o or tova)");
}

TEST(PolicyUnits, RulesAreThePlainDataAKernelCutsBy) {
  const EvictionRule full = PolicyConfig().rule();
  EXPECT_FALSE(full.evicts());
  EXPECT_EQ(full.score, ScoreRule{});

  PolicyConfig s = PolicyConfig::named("streaming");
  s.slack = 3;
  const EvictionRule sr = s.rule();
  EXPECT_EQ(sr, (EvictionRule{4, 60, 0, ScoreRule{}, 64, 3, false}));

  PolicyConfig h = PolicyConfig::named("h2o");
  h.rolling = true;
  EXPECT_EQ(h.rule(), (EvictionRule{4, 32, 28, kAccumulatedScore, 64, 0, true}));

  const EvictionRule t = PolicyConfig::named("tova").rule();
  // TOVA protects no recent token: the newest competes by its current score.
  EXPECT_EQ(t, (EvictionRule{4, 0, 60, kCurrentScore, 64, 0, false}));
}

TEST(PolicyUnits, ABudgetIsSplitByTheKind) {
  PolicySettings s;
  s.budget = 64;
  s.given["sinks"] = 4;
  EXPECT_EQ(make_policy("streaming", s).get("window"), 60);
  EXPECT_EQ(make_policy("tova", s).get("window"), 60);
  const PolicyConfig h = make_policy("h2o", s);
  EXPECT_EQ(h.get("heavy"), 30);
  EXPECT_EQ(h.get("recent"), 30);
  s.budget = 33;  // the odd token goes to recent
  EXPECT_EQ(make_policy("h2o", s).get("heavy"), 14);
  EXPECT_EQ(make_policy("h2o", s).get("recent"), 15);
  // A part given takes its value; the other takes the rest.
  s.budget = 64;
  s.given["heavy"] = 10;
  EXPECT_EQ(make_policy("h2o", s).get("recent"), 50);
  EXPECT_EQ(make_policy("h2o", s).budget(), 64);
  // The full cache has no parameters: a budget does not bound it.
  EXPECT_FALSE(make_policy("full", s).evicts());
}

TEST(PolicyUnits, ImpossibleSplitsAreOneLineNamingTheFlag) {
  PolicySettings s;
  s.budget = 32;
  s.given = {{"sinks", 2}, {"heavy", 50}, {"recent", 8}};
  EXPECT_EQ(error_of([&] { make_policy("h2o", s); }),
            "--budget: sinks=2, heavy=50, recent=8 add up to 60, not to the budget of 32");
  s.given = {{"sinks", 2}, {"heavy", 40}};
  EXPECT_EQ(error_of([&] { make_policy("h2o", s); }), "--budget: sinks=2, heavy=40 exceed the budget of 32");
  s.given = {{"sinks", 2}, {"heavy", 30}};
  EXPECT_NE(error_of([&] { make_policy("h2o", s); }).find("--recent: gets 0 of the budget of 32"), std::string::npos);
  s.given = {{"sinks", 32}};
  EXPECT_EQ(error_of([&] { make_policy("tova", s); }),
            "--sinks: 32 sinks leave no room in a budget of 32 (the newest token must fit)");
  s.budget = 0;
  EXPECT_EQ(error_of([&] { make_policy("streaming", s); }), "--budget: must be at least 1 token, got 0");
  PolicySettings w;
  w.given = {{"window", 0}};
  EXPECT_EQ(error_of([&] { make_policy("tova", w); }), "--window: TOVA needs a window of at least 1 token");
  w.given = {{"window", -2}};
  EXPECT_EQ(error_of([&] { make_policy("streaming", w); }), "--window: must be >= 0, got -2");
}

TEST(PolicyUnits, DescriptionsAndJsonRoundTripForEveryKind) {
  for (const PolicyUnit* unit : policy_units()) {
    PolicyConfig p = PolicyConfig::named(unit->name);
    p.rolling = true;
    if (p.evicts()) p.slack = 2;  // slack means nothing to a cache that never cuts
    const PolicyConfig back = policy_from_json(policy_json(p));
    EXPECT_EQ(back, p) << p.describe();
    EXPECT_EQ(back.describe(), p.describe());
  }
  PolicyConfig h = PolicyConfig::named("h2o");
  h.rolling = true;
  EXPECT_EQ(h.describe(), "h2o(sinks=4,heavy=28,recent=32,rolling)");
  PolicyConfig full;
  full.rolling = true;
  EXPECT_EQ(full.describe(), "full(rolling)");
  EXPECT_EQ(PolicyConfig::named("tova").describe(), "tova(sinks=4,window=60)");
  const nlohmann::json j = policy_json(PolicyConfig::named("streaming"));
  EXPECT_EQ(j, (nlohmann::json{{"policy", "streaming"}, {"name", "streaming(sinks=4,window=60)"}, {"rolling", false},
                               {"sinks", 4}, {"window", 60}, {"budget", 64}, {"slack", 0}}));
  // Version-1 recordings: "kind", and every parameter of every kind.
  const PolicyConfig v1 = policy_from_json(nlohmann::json{
      {"kind", "h2o"}, {"sinks", 2}, {"window", 9}, {"heavy", 3}, {"recent", 5}, {"slack", 0}, {"rolling", false}});
  EXPECT_EQ(v1.describe(), "h2o(sinks=2,heavy=3,recent=5)");
}

TEST(PolicyUnits, FatesFollowTheRuleAndEachKindNamesItsOwn) {
  const PolicyConfig t = PolicyConfig::named("tova").set("sinks", 2).set("window", 3);
  EXPECT_EQ(fate_of(t, 1, true, 20), Fate::Sink);
  EXPECT_EQ(fate_of(t, 19, true, 20), Fate::Heavy);  // no recent band: the newest is kept for its score
  EXPECT_EQ(fate_of(t, 19, false, 20), Fate::Evicted);
  EXPECT_EQ(fate_label(t, Fate::Heavy), "attended now");
  EXPECT_EQ(fate_label(PolicyConfig::named("h2o"), Fate::Heavy), "heavy hitter");
  EXPECT_EQ(fate_label(t, Fate::Sink), "sink");
}

// The inspector's "why": each fate in the policy's own terms, from its rule.
TEST(PolicyUnits, EachFateSaysWhyInThePolicysOwnTerms) {
  const PolicyConfig streaming = PolicyConfig::named("streaming").set("sinks", 4).set("window", 32);
  EXPECT_EQ(fate_reason(streaming, Fate::Evicted), "evicted: it left the newest 32 tokens (the window slid past it)");
  EXPECT_EQ(fate_reason(streaming, Fate::Sink), "held: one of the first 4 tokens, which it always keeps");
  const PolicyConfig h2o = PolicyConfig::named("h2o").set("sinks", 4).set("heavy", 28).set("recent", 32);
  EXPECT_EQ(fate_reason(h2o, Fate::Heavy),
            "held as heavy hitter: its attention summed over every query since it entered is among the 28 highest of "
            "the tokens older than its newest 32");
  EXPECT_EQ(fate_reason(h2o, Fate::Evicted),
            "evicted: it had left the newest 32 tokens and its attention summed over every query since it entered was "
            "not among the 28 highest");
  const PolicyConfig tova = PolicyConfig::named("tova").set("sinks", 2).set("window", 3);
  EXPECT_EQ(fate_reason(tova, Fate::Evicted), "evicted: the newest query's attention to it was not among the 3 highest");
  EXPECT_EQ(fate_reason(PolicyConfig::named("full"), Fate::Cached), "held: the full cache keeps every token");
}
