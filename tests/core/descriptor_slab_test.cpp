// slot_slab, and asio's per-socket state taken from it: side by side, so a burst of sockets
// leaves no heap page pinned by one state each.
#include "core/descriptor_slab.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "core/heap.hpp"
#include "harness/memory.hpp"

namespace burrow {
namespace descriptor_slab_test {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

TEST(SlotSlab, ReusesAFreedSlotBeforeCarvingANewOne) {
  slot_slab slab(40, 4);
  void* a = slab.allocate();
  void* b = slab.allocate();
  EXPECT_NE(a, b);
  slab.deallocate(a);
  EXPECT_EQ(slab.allocate(), a);
  EXPECT_EQ(slab.now().live, 2u);
  EXPECT_EQ(slab.now().chunks, 1u);
  slab.deallocate(a);
  slab.deallocate(b);
}

TEST(SlotSlab, SlotsAreAlignedAndApart) {
  slot_slab slab(40, 4);
  std::vector<void*> slots;
  for (int i = 0; i < 9; ++i) slots.push_back(slab.allocate());
  EXPECT_EQ(slab.now().chunks, 3u);
  std::set<char*> seen;
  for (void* s : slots) {
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(s) % __STDCPP_DEFAULT_NEW_ALIGNMENT__, 0u);
    std::memset(s, 0xa5, 40);  // ASan would catch a slot that overlaps its chunk's end
    seen.insert(static_cast<char*>(s));
  }
  ASSERT_EQ(seen.size(), slots.size());
  for (auto it = seen.begin(); std::next(it) != seen.end(); ++it)
    EXPECT_GE(*std::next(it) - *it, 40);
  for (void* s : slots) slab.deallocate(s);
}

TEST(SlotSlab, GivesItsChunksBackWithTheLastSlot) {
  slot_slab slab(64, 8);
  std::vector<void*> slots;
  for (int i = 0; i < 20; ++i) slots.push_back(slab.allocate());
  EXPECT_EQ(slab.now().chunks, 3u);
  for (int i = 0; i < 19; ++i) slab.deallocate(slots[i]);
  EXPECT_EQ(slab.now().chunks, 3u);
  slab.deallocate(slots[19]);
  EXPECT_EQ(slab.now().live, 0u);
  EXPECT_EQ(slab.now().chunks, 0u);
  void* again = slab.allocate();  // carving starts over in a new chunk
  EXPECT_EQ(slab.now().chunks, 1u);
  slab.deallocate(again);
}

TEST(SlotSlab, ThreadsShareIt) {
  slot_slab slab(48, 16);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&slab, t] {
      std::vector<void*> mine;
      for (int round = 0; round < 200; ++round) {
        for (int i = 0; i < 20; ++i) {
          void* s = slab.allocate();
          std::memset(s, t, 48);
          mine.push_back(s);
        }
        for (void* s : mine) {
          EXPECT_EQ(*static_cast<unsigned char*>(s), t);
          slab.deallocate(s);
        }
        mine.clear();
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(slab.now().live, 0u);
  EXPECT_EQ(slab.now().chunks, 0u);
}

// Raises this process's descriptor limit towards `want`; what it is afterwards.
rlim_t descriptors_up_to(rlim_t want) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return 0;
  if (lim.rlim_cur < want && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = std::min(lim.rlim_max, want);
    ::setrlimit(RLIMIT_NOFILE, &lim);
    ::getrlimit(RLIMIT_NOFILE, &lim);
  }
  return lim.rlim_cur;
}

TEST(DescriptorSlab, ThisBuildUsesIt) {
  // Fails after a Boost upgrade (or a build that compiles asio into every file): asio then
  // allocates its states itself, and the specialization needs checking against the new version
  // before it is enabled again.
  EXPECT_TRUE(descriptor_slab_supported);
}

TEST(DescriptorSlab, HoldsTheReactorsSocketStates) {
  if (!descriptor_slab_supported) GTEST_SKIP() << "asio allocates them itself in this build";
  const auto at_start = descriptor_slab().now().live;
  {
    asio::io_context io;
    std::vector<std::unique_ptr<tcp::socket>> sockets;
    for (int i = 0; i < 50; ++i) {
      sockets.push_back(std::make_unique<tcp::socket>(io));
      sockets.back()->open(tcp::v4());
    }
    EXPECT_GE(descriptor_slab().now().live, at_start + 50);
    sockets.clear();  // closed: asio keeps the states for the next sockets of this io_context
    EXPECT_GE(descriptor_slab().now().live, at_start + 50);
  }
  EXPECT_EQ(descriptor_slab().now().live, at_start);
}

// The burst: each socket opened between a connection's worth of other blocks, as a relay's
// visitors come, then everything closed and freed. With each state in the heap among those
// blocks, about one page per socket stayed resident through the trim (2,000 sockets: 7.8 MiB).
TEST(DescriptorSlab, ABurstOfSocketsLeavesNoPagesPinned) {
  if (!descriptor_slab_supported) GTEST_SKIP() << "asio allocates them itself in this build";
  if (test::sanitizer_allocator) GTEST_SKIP() << "the sanitizer's allocator replaces malloc's";
  constexpr std::size_t count = 2000, block = 3000;
  if (descriptors_up_to(count + 100) < count + 100) GTEST_SKIP() << "too few descriptors";

  asio::io_context io;
  heap_release();
  const auto before = test::resident_bytes();
  {
    std::vector<std::unique_ptr<tcp::socket>> sockets;
    std::vector<void*> blocks;
    sockets.reserve(count);
    blocks.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
      blocks.push_back(std::malloc(block));
      ASSERT_NE(blocks.back(), nullptr);
      std::memset(blocks.back(), 0x5a, block);
      sockets.push_back(std::make_unique<tcp::socket>(io));
      sockets.back()->open(tcp::v4());
    }
    for (void* b : blocks) std::free(b);
  }
  heap_release();
  const auto after = test::resident_bytes();
  EXPECT_LE(after, before + (2u << 20)) << "before " << before << ", after " << after;
}

}  // namespace
}  // namespace descriptor_slab_test
}  // namespace burrow
