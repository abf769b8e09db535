// The app's capture schedule scaled to the model (core/recording/capture_schedule.h):
// a demo model's captures as they always were, fewer keys of the other layers
// and rarer scores at the shapes a GPU serves, so a step's recording stays small.
#include <gtest/gtest.h>

#include "core/recording/capture_schedule.h"

using namespace h2o;

TEST(CaptureSchedule, OtherLayersKeepFewerKeysAsLayersTimesHeadsGrow) {
  EXPECT_EQ(all_layers_keys(4, 8), kAllLayersKeys);    // kjv-1M-sized
  EXPECT_EQ(all_layers_keys(6, 6), kAllLayersKeys);    // stories15M
  EXPECT_EQ(all_layers_keys(16, 32), kAllLayersKeys);  // 512 heads in all: the last unscaled
  EXPECT_EQ(all_layers_keys(22, 32), 34);              // TinyLlama
  EXPECT_EQ(all_layers_keys(32, 32), 24);              // Llama-2-7B
  EXPECT_EQ(all_layers_keys(80, 64), 16);              // a 70B model: never below 16
  EXPECT_EQ(all_layers_keys(32, 0), kAllLayersKeys);   // heads not known
}

TEST(CaptureSchedule, ThePlanAsksEachLayerOnItsScheduleAndScoresByHowMuchTheLayerHolds) {
  StudioCaptureSchedule schedule(5);
  const CapturePlan every_layer = schedule.plan_for(16, 32, 32, 100);
  ASSERT_EQ(every_layer.attention.size(), 32u);
  EXPECT_EQ(every_layer.attention[0].layer, 5);
  EXPECT_EQ(every_layer.attention[0].max_keys, kRecordedKeys);
  EXPECT_EQ(every_layer.attention[0].top_k, kSparsityTopK);
  EXPECT_EQ(every_layer.attention[1].max_keys, 24);
  EXPECT_EQ(every_layer.layer_states, std::vector<int>{5});  // holding little: every step
  EXPECT_EQ(schedule.plan_for(17, 32, 32, 100).attention.size(), 1u);
  // 32 KV heads of 1088 tokens: scores every 1 + 34816 / kStateValuesPerStep = 182 steps.
  static_assert(kStateValuesPerStep == 192);
  int reads = 0;
  for (int64_t step = 0; step < 182 * 3; ++step) reads += !schedule.plan_for(step, 32, 32, 32 * 1088).layer_states.empty();
  EXPECT_EQ(reads, 3);
}
