// heap_trimmer: once per period, and what it releases leaves the process's resident memory.
#include "core/heap.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "harness/memory.hpp"

namespace burrow {
namespace heap_test {
namespace {

using namespace std::chrono_literals;

TEST(HeapTrimmer, IsDueOncePerPeriod) {
  heap_trimmer t(10s);
  const auto t0 = heap_trimmer::clock::time_point{} + 1h;
  EXPECT_TRUE(t.due(t0));
  EXPECT_FALSE(t.due(t0));
  EXPECT_FALSE(t.due(t0 + 9s));
  EXPECT_TRUE(t.due(t0 + 10s));
  EXPECT_FALSE(t.due(t0 + 19s));
  EXPECT_TRUE(t.due(t0 + 25s));
  EXPECT_FALSE(t.due(t0 + 34s));
}

TEST(HeapTrimmer, NotDueReleasesNothing) {
  heap_trimmer t(10s);
  const auto t0 = heap_trimmer::clock::time_point{} + 1h;
  ASSERT_TRUE(t.due(t0));
  EXPECT_EQ(t.tick(t0 + 1s), std::nullopt);
}

using test::resident_bytes;
using test::sanitizer_allocator;

// 32 MiB in 2 KiB blocks, one in 64 kept: the rest is free but pinned between blocks in use, which
// free() cannot give back. The kept blocks are freed at the end, as a burst's last connection
// would be.
TEST(HeapTrimmer, ReturnsFreePagesBetweenBlocksInUse) {
  if (sanitizer_allocator) GTEST_SKIP() << "the sanitizer's allocator replaces malloc's heaps";
  if (heap_now().in_use == 0) GTEST_SKIP() << "no mallinfo2 in this C library";
  constexpr std::size_t block = 2048, count = (32u << 20) / block;
  std::vector<void*> blocks(count);
  for (auto& b : blocks) {
    b = std::malloc(block);
    ASSERT_NE(b, nullptr);
    std::memset(b, 0x5a, block);
  }
  for (std::size_t i = 0; i < count; ++i)
    if (i % 64 != 0) std::free(blocks[i]);

  const auto before = resident_bytes();
  heap_trimmer t(10s);
  const auto released = t.tick(heap_trimmer::clock::now());
  const auto after = resident_bytes();
  for (std::size_t i = 0; i < count; i += 64) std::free(blocks[i]);

  ASSERT_TRUE(released.has_value());
  EXPECT_GE(*released, 30u << 20);
  EXPECT_LE(after + (24u << 20), before) << "before " << before << ", after " << after;
}

}  // namespace
}  // namespace heap_test
}  // namespace burrow
