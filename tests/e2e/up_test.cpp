// `burrow up -c burrow.toml`: several services from one agent, settings layered over the file.
#include <fstream>

#include "e2e/tunnel_fixture.hpp"

namespace burrow::test {
namespace {

TEST_F(tunnel_test, UpExposesEveryServiceOfTheConfigFile) {
  tcp_server one(server_mode::echo);
  tcp_server two(tcp_server_options{.mode = server_mode::echo, .record_prefix = 100});
  auto relay = start_relay();
  auto file = dir_ / "burrow.toml";
  {
    std::ofstream out(file);
    // The file names a relay that does not exist; BURROW_RELAY must win over it.
    out << "relay = \"127.0.0.1:1\"\n"
        << "relay_pin = \"" << relay.fingerprint << "\"\n"
        << "links = 3\n\n"
        << "[[service]]\nname = \"one\"\nlocal = " << one.port() << "\ne2ee = false\n\n"
        << "[[service]]\nname = \"two\"\nlocal = \"127.0.0.1:" << two.port() << "\"\n"
        << "e2ee = false\n"
        << "proxy_protocol = \"v1\"\n";
  }
  auto agent =
      child_process::start("up", {BURROW_BINARY, "up", "-c", file.string()},
                           {{"BURROW_TOKEN", relay.token},
                            {"BURROW_RELAY", "127.0.0.1:" + std::to_string(relay.agent_port)}});
  auto a = agent->wait_for_line(std::regex("tcp 127\\.0\\.0\\.1:" + std::to_string(one.port()) +
                                           R"( is public at \S+:(\d+))"),
                                10s);
  auto b = agent->wait_for_line(std::regex("tcp 127\\.0\\.0\\.1:" + std::to_string(two.port()) +
                                           R"( is public at \S+:(\d+))"),
                                10s);
  ASSERT_TRUE(a && b) << agent->output();
  auto pa = static_cast<std::uint16_t>(std::stoi(a->groups[1]));
  auto pb = static_cast<std::uint16_t>(std::stoi(b->groups[1]));
  EXPECT_NE(pa, pb);
  EXPECT_EQ(exchange(pa, "first"), "first");
  auto reply = exchange(pb, "second");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->substr(0, 11), "PROXY TCP4 ");
  EXPECT_EQ(reply->substr(reply->size() - 6), "second");
  // links = 3 came from the file: three links connect.
  EXPECT_TRUE(agent->wait_for_line(std::regex("link 2 connected"), 5s));
}

TEST_F(tunnel_test, UpRefusesAFileWithMistakes) {
  auto file = dir_ / "bad.toml";
  {
    std::ofstream out(file);
    out << "relay = \"127.0.0.1:1\"\nrealy_pin = \"typo\"\n[[service]]\nlocal = 80\n";
  }
  auto agent = child_process::start("up", {BURROW_BINARY, "up", "-c", file.string()});
  EXPECT_EQ(agent->wait_exit(10s), 1);
  EXPECT_NE(agent->output().find("unknown setting 'realy_pin'"), std::string::npos)
      << agent->output();
}

}  // namespace
}  // namespace burrow::test
