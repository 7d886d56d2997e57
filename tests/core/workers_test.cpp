#include "core/workers.hpp"

#include <gtest/gtest.h>
#include <sched.h>

#include <thread>

#include "harness/affinity.hpp"

namespace burrow {
namespace {

TEST(UsableCores, CountsTheAffinityMask) {
  cpu_set_t all;
  CPU_ZERO(&all);
  ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
  EXPECT_EQ(usable_cores(), static_cast<unsigned>(CPU_COUNT(&all)));
}

// Runs `f` in a thread of its own narrowed to one CPU, so the test's other threads keep their
// mask; false if the mask could not be narrowed.
template <typename F>
bool on_one_cpu(F f) {
  bool narrowed = false;
  std::thread t([&] {
    test::one_cpu_scope scope;
    narrowed = scope.narrowed();
    if (narrowed) f();
  });
  t.join();
  return narrowed;
}

TEST(UsableCores, FollowsANarrowedMaskNotTheMachine) {
  unsigned seen = 0;
  ASSERT_TRUE(on_one_cpu([&] { seen = usable_cores(); }));
  EXPECT_EQ(seen, 1u);
}

TEST(Links, OneCpuKeepsOneLinkByDefaultAndRunsEveryLinkOnOneThread) {
  unsigned links = 0, threads_for_three = 0, threads_for_none = 0;
  ASSERT_TRUE(on_one_cpu([&] {
    links = default_links();
    threads_for_three = threads_for_links(3);
    threads_for_none = threads_for_links(0);
  }));
  EXPECT_EQ(links, 1u);
  EXPECT_EQ(threads_for_three, 1u);
  EXPECT_EQ(threads_for_none, 1u);
}

TEST(Links, MoreCpusKeepTwoLinksAndAThreadPerLinkUpToTheCpus) {
  unsigned cores = usable_cores();
  EXPECT_EQ(default_links(), std::min(2u, cores));
  EXPECT_EQ(threads_for_links(1), 1u);
  EXPECT_EQ(threads_for_links(64), std::min(64u, cores));
}

TEST(Workers, RunsAtLeastOneContext) {
  EXPECT_EQ(workers(0).size(), 1u);
  EXPECT_EQ(workers(3).size(), 3u);
}

}  // namespace
}  // namespace burrow
