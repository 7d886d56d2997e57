#include "core/workers.hpp"

#include <gtest/gtest.h>
#include <sched.h>

#include <thread>

namespace burrow {
namespace {

TEST(UsableCores, CountsTheAffinityMask) {
  cpu_set_t all;
  CPU_ZERO(&all);
  ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
  EXPECT_EQ(usable_cores(), static_cast<unsigned>(CPU_COUNT(&all)));
}

TEST(UsableCores, FollowsANarrowedMaskNotTheMachine) {
  // In a thread of its own, so the test's other threads keep their mask.
  unsigned seen = 0;
  int rc = -1;
  std::thread narrowed([&] {
    cpu_set_t all;
    CPU_ZERO(&all);
    if (sched_getaffinity(0, sizeof all, &all) != 0) return;
    int first = 0;
    while (!CPU_ISSET(first, &all)) ++first;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    rc = sched_setaffinity(0, sizeof one, &one);
    seen = usable_cores();
  });
  narrowed.join();
  ASSERT_EQ(rc, 0);
  EXPECT_EQ(seen, 1u);
}

TEST(Workers, RunsAtLeastOneContext) {
  EXPECT_EQ(workers(0).size(), 1u);
  EXPECT_EQ(workers(3).size(), 3u);
}

}  // namespace
}  // namespace burrow
