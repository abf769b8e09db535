// Huge-page memory for streamed weights: aligned to a huge page, zeroed,
// writable to its last byte, movable without a double unmap.
#include <gtest/gtest.h>

#include <cstdint>
#include <utility>

#include "core/base/huge_page_buffer.h"

namespace {
constexpr uintptr_t kHugePage = uintptr_t(2) << 20;
}

TEST(HugePageBuffer, AlignedZeroedAndWritableToTheEnd) {
  for (size_t bytes : {size_t(1), size_t(4096), kHugePage - 1, kHugePage, 3 * kHugePage + 12345}) {
    h2o::HugePageBuffer b(bytes);
    ASSERT_NE(b.data(), nullptr);
    EXPECT_EQ(b.size(), bytes);
    EXPECT_EQ(uintptr_t(b.data()) % kHugePage, 0u) << bytes;
    EXPECT_EQ(b.data()[0], 0);
    EXPECT_EQ(b.data()[bytes - 1], 0);
    b.data()[0] = 1;
    b.data()[bytes - 1] = 2;
    EXPECT_EQ(b.data()[bytes - 1], 2);
  }
}

TEST(HugePageBuffer, EmptyAndMoved) {
  h2o::HugePageBuffer empty;
  EXPECT_EQ(empty.data(), nullptr);
  EXPECT_EQ(empty.size(), 0u);
  EXPECT_EQ(h2o::HugePageBuffer(0).data(), nullptr);

  h2o::HugePageBuffer a(100);
  a.data()[99] = 7;
  uint8_t* const p = a.data();
  h2o::HugePageBuffer b(std::move(a));
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.data()[99], 7);
  h2o::HugePageBuffer c(50);
  c = std::move(b);  // c's own memory is unmapped, b's taken over
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.size(), 100u);
  EXPECT_EQ(b.data(), nullptr);
}
