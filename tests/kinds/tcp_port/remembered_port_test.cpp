// The public port kept in the agent's state directory across restarts.
#include "kinds/tcp_port/remembered_port.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "harness/scratch_dir.hpp"

namespace burrow::kinds::tcp_port {
namespace {

namespace fs = std::filesystem;

class RememberedPort : public ::testing::Test {
 protected:
  void write(const std::string& name, const std::string& text) {
    fs::create_directories(dir_);
    std::ofstream(dir_ / ("public-port." + name)) << text;
  }
  test::scratch_dir scratch_{"burrow-remembered-port"};
  const fs::path& dir_ = scratch_.path();
};

TEST_F(RememberedPort, NoneUntilOneIsRememberedThenThatOne) {
  EXPECT_EQ(load_remembered_port(dir_, "tcp-5432"), 0);
  remember_port(dir_, "tcp-5432", 20017);  // makes the directory, owner-only
  EXPECT_EQ(load_remembered_port(dir_, "tcp-5432"), 20017);
  EXPECT_EQ(fs::status(dir_).permissions() & fs::perms::all, fs::perms::owner_all);
  remember_port(dir_, "tcp-5432", 20018);
  EXPECT_EQ(load_remembered_port(dir_, "tcp-5432"), 20018);
  EXPECT_EQ(load_remembered_port(dir_, "db"), 0);  // each service its own
}

TEST_F(RememberedPort, AFileThatHoldsNoPortIsIgnored) {
  for (const std::string& text : std::vector<std::string>{"", "0", "65536", "20000-20010", "port",
                                                          "-1", "20000x", std::string(100, '9')}) {
    write("svc", text);
    EXPECT_EQ(load_remembered_port(dir_, "svc"), 0) << text;
  }
  write("svc", "20001\n");
  EXPECT_EQ(load_remembered_port(dir_, "svc"), 20001);
}

TEST_F(RememberedPort, NamesThatAreNoFileNamesAreNotKept) {
  for (auto name : {"", ".", "..", "a/b", "../x", "a b"}) {
    EXPECT_TRUE(remembered_port_file(dir_, name).empty()) << name;
    remember_port(dir_, name, 20001);
    EXPECT_EQ(load_remembered_port(dir_, name), 0) << name;
  }
  EXPECT_FALSE(fs::exists(dir_));
  EXPECT_EQ(remembered_port_file(dir_, "tcp-22.home"), dir_ / "public-port.tcp-22.home");
}

}  // namespace
}  // namespace burrow::kinds::tcp_port
