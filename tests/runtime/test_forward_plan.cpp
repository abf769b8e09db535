// What every backend checks and plans around a forward pass
// (core/runtime/forward_plan.h): the item checks and which rows get logits.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/runtime/forward_plan.h"

using namespace h2o;

namespace {

std::string check_error(const ForwardItem& item) {
  try {
    check_item(item, {"test backend", 100, 4, 8});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(ForwardPlan, ItemChecksNameWhatIsWrong) {
  ForwardItem item;
  EXPECT_EQ(check_error(item), "test backend: forward() with no tokens");
  const std::vector<int> tokens{1, 100};
  item.tokens = tokens;
  EXPECT_EQ(check_error(item), "token id 100 is outside the model's vocabulary (100)");
  const std::vector<int> good{0, 99};
  item.tokens = good;
  EXPECT_EQ(check_error(item), "");
  CapturePlan plan;
  item.capture = &plan;
  plan.attention.push_back({});
  plan.attention[0].layer = 4;
  EXPECT_EQ(check_error(item), "capture: layer 4 does not exist");
  plan.attention[0].layer = 3;
  plan.attention[0].head = 8;
  EXPECT_EQ(check_error(item), "capture: head 8 does not exist");
  plan.attention[0].head = kGroupMean;
  EXPECT_EQ(check_error(item), "");
  plan.layer_states = {0, -1};
  EXPECT_EQ(check_error(item), "capture: layer -1 does not exist");
}

TEST(ForwardPlan, ClassifiedRowsAreTheLastTheForcedPrefixOrAll) {
  const auto rows_of = [](const LogitNeeds& needs, int rows) {
    std::vector<int> out;
    for (int r = 0; r < rows; ++r)
      if (needs.classified(rows, r)) out.push_back(r);
    return out;
  };
  LogitNeeds none;
  EXPECT_TRUE(rows_of(none, 5).empty());
  LogitNeeds choose;
  choose.choose = true;
  EXPECT_EQ(rows_of(choose, 5), (std::vector<int>{4}));
  LogitNeeds forced_and_choose = choose;
  forced_and_choose.forced_rows = 2;  // the forced prefix and the last row, not the rows between
  EXPECT_EQ(rows_of(forced_and_choose, 5), (std::vector<int>{0, 1, 4}));
  LogitNeeds all;
  all.logits = all.all_logits = true;
  EXPECT_EQ(rows_of(all, 3), (std::vector<int>{0, 1, 2}));

  // From an item: choosing needs somewhere to put the token; forced rows stop at the fed rows.
  const std::vector<int> tokens{1, 2, 3};
  const std::vector<int> next{5, 6, 7, 8};
  ForcedTargets targets{next, nullptr};
  TokenChoice greedy;
  ForwardItem item;
  item.tokens = tokens;
  item.choose = &greedy;
  item.forced = &targets;
  EXPECT_FALSE(logit_needs(item).choose);
  EXPECT_EQ(logit_needs(item).forced_rows, 3);
  int chosen = -1;
  item.chosen = &chosen;
  EXPECT_TRUE(logit_needs(item).choose);
}
