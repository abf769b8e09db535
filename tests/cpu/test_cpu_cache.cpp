// The CPU cache's book (core/runtime/cache_book.h): every byte it reserves is
// booked in the backend's KV account, a growth the account refuses changes
// nothing, and the bytes go back when the cache goes.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "core/cpu/cpu_cache.h"
#include "core/model/model.h"
#include "core/policy/kv_precision.h"

using namespace h2o;

namespace {

void expect_booked_as_allocated(const char* bits, bool rolling) {
  SCOPED_TRACE(std::string(bits) + (rolling ? ", rolling" : ""));
  const auto model = make_synthetic({"stories260K", 7, DType::F32, 0, 0});
  auto account = std::make_shared<KvMemoryAccount>();
  PolicyConfig policy = PolicyConfig::named("h2o").set("sinks", 4).set("heavy", 60).set("recent", 64);
  if (std::string(bits) != "32") {  // 32: the default f32 cache
    policy.kv = parse_kv_bits(bits);
    policy.kv.group = 8;  // the tiny model's head_dim
    policy.kv.residual = 16;
  }
  policy.rolling = rolling;
  {
    CpuCache cache(policy, model->config, account);
    for (int rows : {1, 63, 1, 200, 7}) {
      cache.reserve_for(rows);
      EXPECT_EQ(cache.booked_bytes(), cache.allocated_bytes());
      EXPECT_EQ(account->allocated, cache.allocated_bytes());
    }
    EXPECT_GT(account->allocated, 0);
    // Past the limit: refused as one cache's failure, nothing booked.
    const int64_t before = account->allocated;
    account->limit = before + 1;
    EXPECT_THROW(cache.reserve_for(5000), CacheCannotGrow);
    EXPECT_EQ(account->allocated, before);
    EXPECT_EQ(cache.allocated_bytes(), before);
  }
  EXPECT_EQ(account->allocated, 0);
}

}  // namespace

TEST(CpuCacheBook, EveryReservedByteIsBookedAndGivenBack) {
  expect_booked_as_allocated("32", false);
  expect_booked_as_allocated("32", true);
  expect_booked_as_allocated("16", false);
  expect_booked_as_allocated("4", false);
  expect_booked_as_allocated("4,2", false);
}
