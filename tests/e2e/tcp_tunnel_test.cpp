// The TCP tunnel end to end: real relay and agent processes, real sockets, checked bytes.
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "e2e/tunnel_fixture.hpp"
#include "proto/proxy_protocol.hpp"

namespace burrow::test {
namespace {

TEST_F(tunnel_test, EchoThroughTheTunnelWithHalfClose) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay();
  auto agent = start_agent(relay, echo.port());
  ASSERT_NE(agent.public_port, 0);
  // The visitor half-closes after sending and must still receive the whole reply.
  auto reply = exchange(agent.public_port, "hello through the burrow");
  ASSERT_TRUE(reply);
  EXPECT_EQ(*reply, "hello through the burrow");
}

TEST_F(tunnel_test, HundredMiBEachWayWithChecksums) {
  constexpr std::size_t size = 100u << 20;
  tcp_server sink(tcp_server_options{.mode = server_mode::sink_hash});
  tcp_server source(
      tcp_server_options{.mode = server_mode::source, .source_bytes = size, .source_seed = 7});
  auto relay = start_relay();
  auto up = start_agent(relay, sink.port(), {"--name", "sink"});
  auto down = start_agent(relay, source.port(), {"--name", "source"});
  ASSERT_NE(up.public_port, 0);
  ASSERT_NE(down.public_port, 0);

  std::string payload = deterministic_bytes(size, 3);
  std::optional<std::string> upload_hash, download;
  std::thread uploader([&] { upload_hash = exchange(up.public_port, payload, 120s); });
  std::thread downloader([&] { download = exchange(down.public_port, "", 120s); });
  uploader.join();
  downloader.join();

  ASSERT_TRUE(upload_hash);
  ASSERT_EQ(upload_hash->size(), 32u);
  std::string expected_hex = sha256_hex(payload);
  std::string got_hex;
  for (unsigned char c : *upload_hash) {
    static const char* digits = "0123456789abcdef";
    got_hex += digits[c >> 4];
    got_hex += digits[c & 15];
  }
  EXPECT_EQ(got_hex, expected_hex);
  ASSERT_TRUE(download);
  ASSERT_EQ(download->size(), size);
  EXPECT_EQ(sha256_hex(*download), sha256_hex(deterministic_bytes(size, 7)));
}

TEST_F(tunnel_test, ThousandConcurrentVisitorsWithZeroErrors) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay();
  auto agent = start_agent(relay, echo.port());
  ASSERT_NE(agent.public_port, 0);
  EXPECT_EQ(concurrent_echoes(agent.public_port, 1000), 1000);
}

TEST_F(tunnel_test, VisitorThatNeverReadsDoesNotSlowAnotherOnTheSameLink) {
  constexpr std::size_t size = 64u << 20;
  tcp_server source(
      tcp_server_options{.mode = server_mode::source, .source_bytes = size, .source_seed = 5});
  auto relay = start_relay();
  // One link, so both visitors' streams share it.
  auto agent = start_agent(relay, source.port(), {"--links", "1"});
  ASSERT_NE(agent.public_port, 0);
  int stuck = connect_tcp(agent.public_port, 5s);
  ASSERT_GE(stuck, 0);
  std::this_thread::sleep_for(300ms);  // the stuck stream fills its socket buffers and window

  auto started = std::chrono::steady_clock::now();
  auto data = exchange(agent.public_port, "", 60s);
  auto took = std::chrono::steady_clock::now() - started;
  ::close(stuck);
  ASSERT_TRUE(data);
  ASSERT_EQ(data->size(), size);
  EXPECT_EQ(sha256_hex(*data), sha256_hex(deterministic_bytes(size, 5)));
  EXPECT_LT(took, 30s);
  EXPECT_EQ(source.accepted(), 2u);
}

}  // namespace
}  // namespace burrow::test
