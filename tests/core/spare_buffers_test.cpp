// The spare read buffers: reused within a thread, bounded, and safe to give back while a thread
// exits.
#include "core/spare_buffers.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <thread>
#include <vector>

namespace burrow {
namespace spare_buffers_test {
namespace {

TEST(SpareBuffers, ABufferGivenBackIsTheNextOneTaken) {
  void* a = take_spare_buffer();
  ASSERT_NE(a, nullptr);
  std::memset(a, 0x5a, spare_buffer_size);  // the whole size is ours to use
  give_spare_buffer(a);
  void* b = take_spare_buffer();
  EXPECT_EQ(b, a);
  give_spare_buffer(b);
}

TEST(SpareBuffers, AThreadKeepsAtMost64) {
  std::thread([] {
    std::vector<void*> taken;
    for (int i = 0; i < 100; ++i) taken.push_back(take_spare_buffer());
    for (void* b : taken) give_spare_buffer(b);
    // The first 64 given back are kept (the last kept is taken first); the other 36 were freed.
    std::set<void*> kept(taken.begin(), taken.begin() + 64);
    std::vector<void*> again;
    for (int i = 0; i < 64; ++i) again.push_back(take_spare_buffer());
    EXPECT_EQ(std::set<void*>(again.begin(), again.end()), kept);
    for (void* b : again) give_spare_buffer(b);
  }).join();
}

TEST(SpareBuffers, ABufferFromAnotherThreadIsKeptByTheThreadThatGivesItBack) {
  void* b = nullptr;
  std::thread([&] { b = take_spare_buffer(); }).join();
  give_spare_buffer(b);
  void* again = take_spare_buffer();
  EXPECT_EQ(again, b);
  give_spare_buffer(again);
}

// Gives its buffer back from a thread_local destructor that runs after the thread's spare list is
// gone (it was made first, so it is destroyed last).
struct holder {
  void* buffer = nullptr;
  ~holder() { give_spare_buffer(buffer); }
};

TEST(SpareBuffers, GivingBackWhileTheThreadExitsFreesTheBuffer) {
  // Under AddressSanitizer a give into the destroyed list would be a use after free; either way
  // the buffer must not leak (LeakSanitizer).
  std::thread([] {
    static thread_local holder h;
    h.buffer = take_spare_buffer();  // the list is made here, after h
    give_spare_buffer(take_spare_buffer());
  }).join();
  SUCCEED();
}

TEST(SpareAllocator, ServesTheSpareSizeFromTheSparesAndOtherSizesFromTheHeap) {
  spare_allocator<char> alloc;
  char* small = alloc.allocate(spare_buffer_size);
  alloc.deallocate(small, spare_buffer_size);
  void* again = take_spare_buffer();
  EXPECT_EQ(again, small);  // it went back to the spares
  give_spare_buffer(again);

  char* other = alloc.allocate(spare_buffer_size + 1);
  other[spare_buffer_size] = 1;
  alloc.deallocate(other, spare_buffer_size + 1);
  void* next = take_spare_buffer();
  EXPECT_EQ(next, small);  // the other size did not join the spares
  give_spare_buffer(next);
}

}  // namespace
}  // namespace spare_buffers_test
}  // namespace burrow
