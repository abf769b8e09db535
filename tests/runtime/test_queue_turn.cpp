// Engine::queue_turn: a prompt typed into the live stream begins when the
// current turn ends, before the rest of the list, which then goes on.
#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/cpu/cpu_backend.h"
#include "core/studio/studio_setup.h"

using namespace h2o;

namespace {
Turn typed(const std::string& text) {
  Turn t;
  t.text = text;
  return t;
}
}  // namespace

TEST(QueueTurn, ATypedTurnFollowsTheCurrentOneThenTheListGoesOn) {
  StudioConfig c;
  c.model = "synthetic:stories260K";
  c.max_new_tokens = 3;
  c.greedy = true;
  c.policies = {"full", "h2o"};
  const StudioInputs in = load_studio_inputs(c);
  auto engine = make_studio_engine(c, in, make_cpu_backend(in.model, 1));
  const std::vector<Turn> turns = engine->turns();
  ASSERT_GE(turns.size(), 2u);
  // Mid-way through turn 0, a typed turn is queued.
  StepRecord r = engine->step();
  EXPECT_EQ(r.prompt_index, 0);
  engine->queue_turn(typed("What is a heavy hitter?"));
  EXPECT_EQ(engine->queued_turns(), 1u);
  // The rest of turn 0, then the typed turn (prompt index -1) with its template, then turn 1.
  std::vector<int> typed_fed;
  std::vector<int> order;
  while (order.size() < 3 || order.back() != 1) {
    r = engine->step();
    if (order.empty() || order.back() != r.prompt_index) order.push_back(r.prompt_index);
    if (r.prompt_index == -1 && r.phase == Phase::Prefill)
      typed_fed.insert(typed_fed.end(), r.sessions[0].fed.begin(), r.sessions[0].fed.end());
    ASSERT_LT(engine->steps(), 400) << "the typed turn never came";
  }
  EXPECT_EQ(order, (std::vector<int>{0, -1, 1}));
  const std::vector<int> want = engine->chat_template().encode_turn(*engine->tokenizer(), "What is a heavy hitter?", false);
  // The first fed token of a turn may be the previous answer's last one.
  ASSERT_GE(typed_fed.size(), want.size());
  EXPECT_EQ(std::vector<int>(typed_fed.end() - long(want.size()), typed_fed.end()), want);
  EXPECT_EQ(engine->queued_turns(), 0u);
  EXPECT_THROW(engine->queue_turn(Turn{}), Error);
}

TEST(QueueTurn, ForcedModeRefusesATypedTurn) {
  StudioConfig c;
  c.model = "synthetic:stories260K";
  c.forced = true;
  c.policies = {"full", "h2o"};
  const StudioInputs in = load_studio_inputs(c);
  auto engine = make_studio_engine(c, in, make_cpu_backend(in.model, 1));
  EXPECT_THROW(engine->queue_turn(typed("hello")), Error);
}
