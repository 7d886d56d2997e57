// A path for one test's files under the system's temporary directory, named for the process and
// the running test, and removed (with everything in it) when the test ends. It is not created:
// a test may check that the code under test creates it, or never does.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <string_view>

namespace burrow::test {

class scratch_dir {
 public:
  explicit scratch_dir(std::string_view prefix)
      : path_(std::filesystem::temp_directory_path() /
              (std::string(prefix) + "-" + std::to_string(::getpid()) + "-" + test_name())) {
    std::filesystem::remove_all(path_);
  }
  ~scratch_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  static std::string test_name() {
    auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    return info ? info->name() : "outside-a-test";
  }
  std::filesystem::path path_;
};

}  // namespace burrow::test
