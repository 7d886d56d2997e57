// Fails the test run when a child process (the relay, an agent, `burrow connect`) printed a
// sanitizer report: under ThreadSanitizer the race is in the child, and its exit code is often
// never looked at because the test ends it with SIGKILL.
#include <gtest/gtest.h>

#include "harness/process.hpp"

namespace burrow::test {
namespace {

class sanitizer_check : public ::testing::Environment {
 public:
  void TearDown() override {
    EXPECT_EQ(child_process::sanitizer_reports(), 0u)
        << "a child process printed a sanitizer report (see its [name]-tagged output above)";
  }
};

// ctest runs each test in its own process, so this fails exactly the test that saw the report.
[[maybe_unused]] const auto* const registered =
    ::testing::AddGlobalTestEnvironment(new sanitizer_check);

}  // namespace
}  // namespace burrow::test
