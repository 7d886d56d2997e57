// The relay under attack, listener by listener, with the hostile-client tool: slowloris, random
// bytes, truncated and malformed ClientHellos, millions of tiny frames, stream-id abuse and
// descriptor exhaustion. Each case checks that the relay is still up, that another tunnel's
// transfer completed intact, and that the right counter and log line appeared.
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <future>
#include <thread>

#include "e2e/tunnel_fixture.hpp"
#include "harness/hostile.hpp"
#include "proto/control.hpp"

namespace burrow::test {
namespace {

class attack_test : public tunnel_test {
 protected:
  void SetUp() override {
    tunnel_test::SetUp();
    relay_ = start_relay({"--handshake-timeout", "2s", "--metrics-listen", "127.0.0.1:0"});
    ASSERT_NE(relay_.metrics_port, 0);
    agent_ = start_agent(relay_, echo_.port());
    ASSERT_NE(agent_.public_port, 0);
  }
  double rejected(const char* listener, const char* reason) {
    return metric_value(fetch_metrics(relay_.metrics_port),
                        std::string("burrow_relay_rejected_total{listener=\"") + listener +
                            "\",reason=\"" + reason + "\"}");
  }
  bool logged(const std::string& re) {
    return relay_.proc->wait_for_line(std::regex(re), 5s).has_value();
  }

  tcp_server echo_{server_mode::echo};
  relay_process relay_;
  agent_process agent_;
};

TEST_F(attack_test, SlowlorisOnEveryListenerIsCutOffAtItsDeadline) {
  // A byte every 100 ms of something each listener would accept, if it ever ended.
  auto agent_port = std::async(std::launch::async, slowloris, relay_.agent_port,
                               client_hello("", "burrow/1"), 100ms, 10s);
  auto https = std::async(std::launch::async, slowloris, relay_.https_port,
                          client_hello("web.burrow.localhost"), 100ms, 10s);
  auto http = std::async(
      std::launch::async, slowloris, relay_.http_port,
      "GET / HTTP/1.1\r\nHost: web.burrow.localhost\r\n" + std::string(2000, 'x'), 100ms, 10s);
  check_bystander(agent_.public_port);  // while they trickle
  for (auto* f : {&agent_port, &https, &http}) {
    auto closed = f->get();
    ASSERT_TRUE(closed) << "still open after 10s";
    EXPECT_GE(*closed, 1900ms);
    EXPECT_LE(*closed, 5s);
  }
  EXPECT_EQ(rejected("agent", "handshake_timeout"), 1);
  EXPECT_EQ(rejected("https", "client_hello_timeout"), 1);
  EXPECT_EQ(rejected("http", "request_head_timeout"), 1);
  EXPECT_TRUE(
      logged(R"(agent listener: connection from 127\.0\.0\.1:\d+ rejected \(handshake_timeout\))"));
  EXPECT_TRUE(logged(
      R"(HTTPS listener: connection from 127\.0\.0\.1:\d+ rejected \(client_hello_timeout\))"));
  EXPECT_TRUE(logged(
      R"(HTTP listener: connection from 127\.0\.0\.1:\d+ rejected \(request_head_timeout\))"));
  EXPECT_TRUE(relay_.proc->running());
}

TEST_F(attack_test, RandomBytesAndTruncatedTlsOnEveryListener) {
  auto hello = client_hello("web.burrow.localhost");
  for (auto port : {relay_.agent_port, relay_.https_port, relay_.http_port}) {
    for (int i = 0; i < 10; ++i) send_and_close(port, deterministic_bytes(64 + i * 331, i));
    send_and_close(port, hello.substr(0, hello.size() / 2));  // cut off half way
  }
  // Random bytes with a blank line: a "head" the HTTP listener must parse and refuse.
  send_and_close(relay_.http_port, deterministic_bytes(300, 99) + "\r\n\r\n");
  check_bystander(agent_.public_port);
  // Each counter moves; a few random blobs may land in another bucket, so at least one each.
  EXPECT_GE(rejected("agent", "tls_failed"), 10);
  EXPECT_GE(rejected("https", "not_client_hello"), 1);
  EXPECT_GE(rejected("https", "closed_early"), 1);
  EXPECT_GE(rejected("http", "bad_request"), 1);
  EXPECT_GE(rejected("http", "closed_early"), 1);
  EXPECT_TRUE(logged(
      R"(agent listener: connection from \S+ rejected \(tls_failed\): TLS handshake failed)"));
  EXPECT_TRUE(logged(
      R"(HTTPS listener: connection from \S+ rejected \((not_client_hello|closed_early)\))"));
  EXPECT_TRUE(
      logged(R"(HTTP listener: connection from \S+ rejected \((bad_request|closed_early)\))"));
  EXPECT_TRUE(relay_.proc->running());
}

TEST_F(attack_test, MalformedAndOversizedClientHellosAreRefused) {
  auto hello = client_hello("web.burrow.localhost");
  ASSERT_GT(hello.size(), 60u);
  auto lying = hello;  // the handshake claims 16 MiB inside a small record
  lying[6] = '\xff';
  lying[7] = '\xff';
  lying[8] = '\xff';
  auto not_handshake = hello;
  not_handshake[0] = '\x17';  // application data before any handshake
  auto bad_extensions = hello;
  bad_extensions[hello.size() - 3] ^= 0x5a;  // inside the last extension
  bad_extensions[hello.size() - 30] ^= 0x5a;
  // A 60 KiB record stream of nothing but hello bytes: more than the peek will hold.
  std::string oversized;
  while (oversized.size() < 70000) oversized += "\x16\x03\x01\x40\x00" + std::string(0x4000, 'A');
  int which = 0;
  for (auto* bytes : {&lying, &not_handshake, &bad_extensions, &oversized}) {
    int fd = connect_tcp(relay_.https_port, 5s);
    ASSERT_GE(fd, 0);
    write_all(fd, *bytes, 5s);
    EXPECT_TRUE(closed_by_peer(fd, 3s)) << which++;
    ::close(fd);
  }
  check_bystander(agent_.public_port);
  EXPECT_GE(rejected("https", "not_client_hello"), 3);
  EXPECT_TRUE(logged(R"(HTTPS listener: connection from \S+ rejected \(not_client_hello\))"));
  EXPECT_TRUE(relay_.proc->running());
}

TEST_F(attack_test, MillionsOfTinyFramesAndStreamIdAbuseLeaveTheLinkServed) {
  rogue_agent rogue(relay_.agent_port, relay_.token);
  ASSERT_TRUE(rogue.welcomed());
  // 2 million one-byte frames for streams that were never opened, at ids all over the range,
  // with window updates and resets for them mixed in: each is dropped and counted.
  std::string burst;
  for (std::uint32_t i = 0; i < 20000; ++i) {
    burst += frame(proto::frame_type::data, 0, (i * 2654435761u) | 1u, "x");
    if (i % 4 == 0) burst += frame(proto::frame_type::window, 0, i + 1, std::string(4, '\x7f'));
    if (i % 8 == 0) burst += frame(proto::frame_type::reset, 0, i + 2, std::string(1, '\x01'));
  }
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 100 && std::chrono::steady_clock::now() - start < 60s; ++i) rogue.send(burst);
  // The link still answers, so the relay read and dropped all of it without closing.
  EXPECT_TRUE(rogue.ping_answered(30s));
  // Stream bytes on stream 0 (the link's own) end the link as a protocol error.
  rogue.send(frame(proto::frame_type::data, 0, 0, "x"));
  EXPECT_TRUE(rogue.wait_closed(5s));
  EXPECT_TRUE(logged(
      R"(session rogue-se link 0 disconnected: protocol error: frame on the wrong stream id)"));
  check_bystander(agent_.public_port);
  auto text = fetch_metrics(relay_.metrics_port);
  EXPECT_LT(metric_value(text, "burrow_relay_open_descriptors"), 64) << text;
  EXPECT_TRUE(relay_.proc->running());
}

TEST_F(attack_test, RunningOutOfDescriptorsPausesAcceptAndRecovers) {
#if defined(BURROW_UBSAN_VPTR)
  // UBSan's vptr check needs a pipe(2) to probe a vtable; with the relay out of descriptors it
  // reports "invalid vptr" on sound objects and aborts the relay. The release suite and the
  // ThreadSanitizer step run this test.
  GTEST_SKIP() << "UBSan's vptr check cannot run in a process out of descriptors";
#endif
  // A visitor already connected before descriptors run out.
  int old = connect_tcp(agent_.public_port, 5s);
  ASSERT_GE(old, 0);
  ASSERT_TRUE(write_all(old, "before", 5s));
  ASSERT_EQ(read_exact(old, 6, 5s), "before");
  // Lower the relay's own descriptor limit to just above what it holds now.
  auto text = fetch_metrics(relay_.metrics_port);
  auto open = static_cast<rlim_t>(metric_value(text, "burrow_relay_open_descriptors"));
  ASSERT_GT(open, 0u);
  rlimit roomy{};
  ASSERT_EQ(::prlimit(relay_.proc->pid(), RLIMIT_NOFILE, nullptr, &roomy), 0);
  rlimit tight{open + 8, roomy.rlim_max};  // the soft limit only, so it can be raised again
  ASSERT_EQ(::prlimit(relay_.proc->pid(), RLIMIT_NOFILE, &tight, nullptr), 0);
  // Visitors from 127.0.0.2 take what is left; the next accepts fail with EMFILE.
  std::vector<int> hogs;
  for (int i = 0; i < 40; ++i) {
    int fd = connect_tcp(agent_.public_port, 2s, "127.0.0.1", "127.0.0.2");
    if (fd >= 0) hogs.push_back(fd);
  }
  EXPECT_TRUE(logged(R"(public port \d+: accept failed: Too many open files; retrying in 100ms)"));
  // The connection that was open before keeps working: 1 MiB through it, checked.
  auto payload = deterministic_bytes(1 << 20, 8);
  std::thread writer([&] { write_all(old, payload, 20s); });
  auto back = read_exact(old, payload.size(), 20s);
  writer.join();
  ASSERT_TRUE(back);
  EXPECT_EQ(sha256_hex(*back), sha256_hex(payload));
  ::close(old);
  // Give descriptors back and the relay accepts again by itself.
  for (int fd : hogs) ::close(fd);
  ASSERT_EQ(::prlimit(relay_.proc->pid(), RLIMIT_NOFILE, &roomy, nullptr), 0);
  check_bystander(agent_.public_port);
  text = fetch_metrics(relay_.metrics_port);
  EXPECT_GE(metric_value(text, "burrow_relay_accept_errors_total{listener=\"port\"}"), 1) << text;
  EXPECT_TRUE(relay_.proc->running());
}

// Resident memory of a process, in KiB, from /proc.
long rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

TEST_F(attack_test, VisitorsThatNeverReadCannotGrowTheRelay) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // The relay is the same build: its resident memory is the sanitizer's (ASan keeps up to
  // 256 MiB of freed blocks in quarantine, TSan shadows every byte), so the bound means nothing
  // here. The release and debug suites check it.
  GTEST_SKIP() << "resident memory under a sanitizer measures the sanitizer";
#endif
  // 20 visitors push up to 32 MiB each into an echo they never read back, and 20 more open a
  // 64 MiB download they never read: nearly 2 GiB on offer. Flow control must hold the relay to
  // about a window per stream and direction (256 KiB) whatever they do.
  tcp_server source(
      tcp_server_options{.mode = server_mode::source, .source_bytes = 64u << 20, .source_seed = 3});
  auto download = start_agent(relay_, source.port(), {"--name", "download"});
  ASSERT_NE(download.public_port, 0);
  check_bystander(agent_.public_port);  // warm: the relay's pools and threads exist
  long before = rss_kib(relay_.proc->pid());
  ASSERT_GT(before, 0);

  std::vector<int> fds;
  std::string chunk = deterministic_bytes(1 << 20, 6);
  for (int i = 0; i < 20; ++i) {
    int up = connect_tcp(agent_.public_port, 5s);
    int down = connect_tcp(download.public_port, 5s);
    ASSERT_GE(up, 0);
    ASSERT_GE(down, 0);
    fds.push_back(up);
    fds.push_back(down);
  }
  auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < fds.size(); i += 2)
    for (int mb = 0; mb < 32 && std::chrono::steady_clock::now() - start < 20s; ++mb)
      if (!write_all(fds[i], chunk, 200ms)) break;  // blocked: flow control pushed back
  std::this_thread::sleep_for(1s);
  long after = rss_kib(relay_.proc->pid());
  EXPECT_LT(after - before, 64 * 1024) << "relay grew from " << before << " to " << after << " KiB";
  for (int fd : fds) ::close(fd);
  check_bystander(agent_.public_port);
  EXPECT_TRUE(relay_.proc->running());
}

}  // namespace
}  // namespace burrow::test
