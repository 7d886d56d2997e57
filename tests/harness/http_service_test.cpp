// Self-tests of the local HTTP service and WebSocket clients, with real curl and raw sockets.
#include "harness/http_service.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "core/deadline.hpp"
#include "core/spawn.hpp"
#include "harness/net.hpp"
#include "harness/process.hpp"
#include "harness/use_tuple.hpp"
#include "tls/certs.hpp"

namespace burrow::test {
namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace fs = std::filesystem;
using tcp = asio::ip::tcp;

// Runs a program to its end within `limit`; its merged output, or nullopt unless it exited 0.
std::optional<std::string> run(std::vector<std::string> argv, std::chrono::milliseconds limit) {
  auto r = run_program(std::move(argv), limit);
  if (r.code != 0) return std::nullopt;
  return r.output;
}

// The output's last newline comes from the line log, not from the program: it is dropped.
std::optional<std::string> curl(std::vector<std::string> args) {
  std::vector<std::string> argv{"/usr/bin/curl", "-sS", "--max-time", "10"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto out = run(std::move(argv), 15s);
  if (out && !out->empty()) out->pop_back();
  return out;
}

// A shell pipeline under bash -o pipefail, so that a failing curl fails the whole line.
std::optional<std::string> pipeline(const std::string& command) {
  return run({"/bin/bash", "-c", "set -o pipefail; " + command}, 15s);
}

// Reads from fd until `needle` appears in what was read; everything read, or nullopt at the
// deadline, on error or at EOF without it.
std::optional<std::string> read_until(int fd, std::string_view needle,
                                      std::chrono::milliseconds deadline) {
  auto until = std::chrono::steady_clock::now() + deadline;
  std::string got;
  char buf[4096];
  while (got.find(needle) == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (left <= 0ms) return std::nullopt;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return std::nullopt;
    got.append(buf, static_cast<std::size_t>(n));
  }
  return got;
}

struct temp_dir {
  fs::path path;
  temp_dir() {
    std::string tmpl = (fs::temp_directory_path() / "burrow-httpsvc-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~temp_dir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

std::string url(const http_service& svc, const std::string& target) {
  return "http://127.0.0.1:" + std::to_string(svc.port()) + target;
}

TEST(HttpService, PatternIsConsistentAtAnyOffset) {
  auto whole = pattern_bytes(0, 1000);
  EXPECT_EQ(pattern_bytes(3, 997), whole.substr(3));
  EXPECT_EQ(pattern_bytes(517, 11), whole.substr(517, 11));
  EXPECT_NE(whole.substr(0, 64), whole.substr(64, 64));
  EXPECT_EQ(pattern_sha256_hex(1000), sha256_hex(whole));
  EXPECT_EQ(pattern_sha256_hex(0), sha256_hex(""));
}

TEST(HttpService, HeadersComeBackAsJson) {
  http_service svc;
  auto out = curl({"-H", "X-Forwarded-For: 203.0.113.7", "-H", "X-Multi: a", "-H", "X-Multi: b",
                   url(svc, "/headers?x=1")});
  ASSERT_TRUE(out);
  auto doc = boost::json::parse(*out).as_object();
  EXPECT_EQ(doc.at("method").as_string(), "GET");
  EXPECT_EQ(doc.at("target").as_string(), "/headers?x=1");
  auto& headers = doc.at("headers").as_object();
  EXPECT_EQ(headers.at("x-multi").as_string(), "a, b");
  EXPECT_EQ(headers.at("host").as_string(), "127.0.0.1:" + std::to_string(svc.port()));
  EXPECT_EQ(svc.last_headers()["x-forwarded-for"], "203.0.113.7");
  EXPECT_EQ(svc.requests_seen(), 1u);
  EXPECT_EQ(svc.connections_seen(), 1u);
}

TEST(HttpService, KeepAliveServesManyRequestsOnOneConnection) {
  http_service svc;
  auto out = curl({"-w", "%{http_code}\n", "-o", "/dev/null", url(svc, "/headers"), "-o",
                   "/dev/null", url(svc, "/slow?ms=1"), "-o", "/dev/null", url(svc, "/nope")});
  ASSERT_TRUE(out);
  EXPECT_EQ(*out, "200\n200\n404");
  EXPECT_EQ(svc.requests_seen(), 3u);
  EXPECT_EQ(svc.connections_seen(), 1u);
}

TEST(HttpService, Sha256OfUploads) {
  http_service svc;
  temp_dir dir;
  auto data = deterministic_bytes(20 * 1024 * 1024 + 7, 42);
  auto file = (dir.path / "upload.bin").string();
  std::ofstream(file, std::ios::binary) << data;
  auto expected = sha256_hex(data) + " " + std::to_string(data.size());

  auto sized = curl({"--data-binary", "@" + file, url(svc, "/sha256")});
  ASSERT_TRUE(sized);
  EXPECT_EQ(*sized, expected);
  EXPECT_EQ(svc.last_headers()["content-length"], std::to_string(data.size()));

  auto chunked =
      curl({"--data-binary", "@" + file, "-H", "Transfer-Encoding: chunked", url(svc, "/sha256")});
  ASSERT_TRUE(chunked);
  EXPECT_EQ(*chunked, expected);
  EXPECT_EQ(svc.last_headers()["transfer-encoding"], "chunked");

  auto put = curl({"-T", file, url(svc, "/sha256")});
  ASSERT_TRUE(put);
  EXPECT_EQ(*put, expected);
}

TEST(HttpService, BytesMatchThePattern) {
  http_service svc;
  temp_dir dir;
  std::uint64_t n = 50 * 1024 * 1024 + 123;  // not a whole number of 64 KiB writes
  auto head = (dir.path / "head").string();
  for (std::string chunked : {"0", "1"}) {
    auto out =
        pipeline("curl -sS --max-time 10 -D " + head + " '" +
                 url(svc, "/bytes/" + std::to_string(n) + "?chunked=" + chunked) + "' | sha256sum");
    ASSERT_TRUE(out) << "chunked=" << chunked;
    EXPECT_EQ(out->substr(0, 64), pattern_sha256_hex(n)) << "chunked=" << chunked;
    std::ifstream in(head);
    std::string headers((std::istreambuf_iterator<char>(in)), {});
    if (chunked == "1") {
      EXPECT_NE(headers.find("Transfer-Encoding: chunked"), std::string::npos) << headers;
    } else {
      EXPECT_NE(headers.find("Content-Length: " + std::to_string(n)), std::string::npos) << headers;
    }
  }
}

TEST(HttpService, HeadSendsOnlyTheHead) {
  http_service svc;
  int fd = connect_tcp(svc.port(), 2s);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(write_all(fd,
                        "HEAD /bytes/1000 HTTP/1.1\r\nHost: x\r\n\r\n"
                        "HEAD /bytes/1000?chunked=1 HTTP/1.1\r\nHost: x\r\n\r\n"
                        "GET /bytes/5 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                        2s));
  auto all = read_until_eof(fd, 5s, 1 << 20);
  ::close(fd);
  ASSERT_TRUE(all);
  // Each head is followed directly by the next response: no body after a HEAD.
  std::vector<std::string> heads;
  std::size_t pos = 0;
  for (int i = 0; i < 3; ++i) {
    auto end = all->find("\r\n\r\n", pos);
    ASSERT_NE(end, std::string::npos) << *all;
    heads.push_back(all->substr(pos, end + 4 - pos));
    pos = end + 4;
  }
  for (const auto& head : heads) EXPECT_EQ(head.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << *all;
  EXPECT_NE(heads[0].find("Content-Length: 1000\r\n"), std::string::npos) << *all;
  EXPECT_NE(heads[1].find("Transfer-Encoding: chunked\r\n"), std::string::npos) << *all;
  EXPECT_NE(heads[2].find("Content-Length: 5\r\n"), std::string::npos) << *all;
  EXPECT_EQ(all->substr(pos), pattern_bytes(0, 5));
}

TEST(HttpService, ServerSentEventsArriveSpreadInTime) {
  http_service svc;
  auto p = child_process::start("curl", {"/usr/bin/curl", "-sS", "-N", "--max-time", "10",
                                         url(svc, "/sse?count=5&interval_ms=200")});
  ASSERT_TRUE(p);
  ASSERT_TRUE(p->wait_for_line(std::regex("^data: event 0$"), 5s)) << p->output();
  auto first = std::chrono::steady_clock::now();
  ASSERT_TRUE(p->wait_for_line(std::regex("^data: event 4$"), 5s)) << p->output();
  auto spread = std::chrono::steady_clock::now() - first;
  EXPECT_GE(spread, 600ms);  // four intervals of 200 ms, with slack for line delivery
  ASSERT_EQ(p->wait_exit(5s), 0) << p->output();  // the server closes after the last event
  auto out = p->output();
  std::size_t events = 0;
  for (auto pos = out.find("data: event "); pos != std::string::npos;
       pos = out.find("data: event ", pos + 1))
    ++events;
  EXPECT_EQ(events, 5u) << out;
  EXPECT_EQ(svc.last_headers()["accept"], "*/*");
}

TEST(HttpService, PipelinedResponsesComeInOrder) {
  http_service svc;
  int fd = connect_tcp(svc.port(), 2s);
  ASSERT_GE(fd, 0);
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(write_all(fd,
                        "GET /slow?ms=200 HTTP/1.1\r\nHost: x\r\n\r\n"
                        "GET /headers HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                        2s));
  auto all = read_until_eof(fd, 5s, 1 << 20);
  ::close(fd);
  ASSERT_TRUE(all);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 200ms);
  auto slow = all->find("\r\n\r\nslow");
  auto headers = all->find("\"target\":\"/headers\"");
  ASSERT_NE(slow, std::string::npos) << *all;
  ASSERT_NE(headers, std::string::npos) << *all;
  EXPECT_LT(slow, headers) << *all;
  EXPECT_EQ(svc.requests_seen(), 2u);
  EXPECT_EQ(svc.connections_seen(), 1u);
}

TEST(HttpService, EchoStreamsBeforeTheBodyEnds) {
  http_service svc;
  int fd = connect_tcp(svc.port(), 2s);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(write_all(fd,
                        "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                        "Connection: close\r\n\r\n5\r\nfirst\r\n",
                        2s));
  // The echo of the first chunk arrives while the request is still open.
  auto early = read_until(fd, "first", 5s);
  ASSERT_TRUE(early);
  EXPECT_NE(early->find("Transfer-Encoding: chunked"), std::string::npos) << *early;
  ASSERT_TRUE(write_all(fd, "6\r\nsecond\r\n0\r\n\r\n", 2s));
  auto rest = read_until_eof(fd, 5s, 1 << 20);
  ::close(fd);
  ASSERT_TRUE(rest);
  EXPECT_NE(rest->find("second"), std::string::npos) << *rest;
  EXPECT_NE(rest->find("0\r\n\r\n"), std::string::npos) << *rest;

  auto out = curl({"--data-binary", "hello echo", url(svc, "/echo")});
  ASSERT_TRUE(out);
  EXPECT_EQ(*out, "hello echo");
}

TEST(HttpService, CloseRouteClosesTheConnection) {
  http_service svc;
  int fd = connect_tcp(svc.port(), 2s);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(write_all(fd, "GET /close HTTP/1.1\r\nHost: x\r\n\r\n", 2s));
  auto all = read_until_eof(fd, 5s, 1 << 20);  // EOF from the server, not from our deadline
  ::close(fd);
  ASSERT_TRUE(all);
  EXPECT_NE(all->find("Connection: close"), std::string::npos) << *all;

  auto missing = curl({"-o", "/dev/null", "-w", "%{http_code}", url(svc, "/nothing/here")});
  ASSERT_TRUE(missing);
  EXPECT_EQ(*missing, "404");
}

TEST(HttpService, WebSocketEchoPlain) {
  http_service svc;
  std::vector<std::string> texts{"hello", "", std::string(100'000, 'x')};
  EXPECT_EQ(ws_echo_plain(svc.port(), "app.example", texts, 5s), texts);
  EXPECT_EQ(svc.last_headers()["host"], "app.example");
  EXPECT_EQ(svc.last_headers()["upgrade"], "websocket");

  std::vector<std::string> binaries{std::string("\0\xff\x01", 3), deterministic_bytes(70'000, 3)};
  EXPECT_EQ(ws_echo_plain(svc.port(), "app.example", binaries, 5s, true), binaries);
}

TEST(HttpService, WebSocketClientReportsWhatFailed) {
  tcp_server silent({.mode = server_mode::sink_hash});  // accepts, never answers the upgrade
  try {
    ws_echo_plain(silent.port(), "app.example", {"x"}, 300ms);
    FAIL() << "expected a timeout";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no result within 300 ms"), std::string::npos) << e.what();
  }
  try {
    // A bound socket that does not listen: connecting to its port is refused.
    asio::io_context ioc;
    tcp::acceptor bound(ioc, tcp::v4());
    bound.bind({asio::ip::address_v4::loopback(), 0});
    ws_echo_plain(bound.local_endpoint().port(), "app.example", {"x"}, 2s);
    FAIL() << "expected a refused connection";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("connecting to 127.0.0.1"), std::string::npos) << e.what();
  }
}

TEST(HttpService, ListensOnIpv6) {
  std::unique_ptr<http_service> svc;
  try {
    svc = std::make_unique<http_service>(http_service_options{.host = "::1"});
  } catch (const std::system_error& e) {
    GTEST_SKIP() << "no IPv6 loopback: " << e.what();
  }
  auto out = curl({"-g", "http://[::1]:" + std::to_string(svc->port()) + "/headers"});
  ASSERT_TRUE(out);
  EXPECT_NE(out->find("\"method\":\"GET\""), std::string::npos) << *out;
}

TEST(HttpService, StopEndsOpenConnectionsPromptly) {
  auto svc = std::make_unique<http_service>();
  auto p = child_process::start(
      "curl", {"/usr/bin/curl", "-sS", "--max-time", "30", url(*svc, "/slow?ms=60000")});
  ASSERT_TRUE(p);
  for (auto until = std::chrono::steady_clock::now() + 5s;
       svc->requests_seen() == 0 && std::chrono::steady_clock::now() < until;)
    std::this_thread::sleep_for(10ms);
  ASSERT_EQ(svc->requests_seen(), 1u);
  auto start = std::chrono::steady_clock::now();
  svc.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_NE(p->wait_exit(5s), 0);  // curl saw the connection end without a response
}

// --- WebSocket over TLS, through a TLS terminator like the agent's ---------------------------

template <class From, class To>
asio::awaitable<void> pump(From* from, To* to) {
  std::array<char, 16384> buf;
  for (;;) {
    auto [ec, n] = co_await from->async_read_some(asio::buffer(buf), use_tuple);
    if (ec) co_return;
    auto [wec, m] = co_await asio::async_write(*to, asio::buffer(buf.data(), n), use_tuple);
    if (wec) co_return;
  }
}

asio::awaitable<void> terminate_tls(tcp::socket socket, asio::ssl::context* tls,
                                    std::uint16_t target) {
  using namespace asio::experimental::awaitable_operators;
  asio::ssl::stream<tcp::socket> visitor(std::move(socket), *tls);
  auto handshake = visitor.async_handshake(asio::ssl::stream_base::server, use_tuple);
  auto hello = co_await with_deadline(std::move(handshake), 5000ms);
  if (!hello || std::get<0>(*hello)) co_return;  // e.g. the client rejected our certificate
  tcp::socket service(visitor.get_executor());
  tcp::endpoint endpoint(asio::ip::address_v4::loopback(), target);
  auto [ec] = co_await service.async_connect(endpoint, use_tuple);
  if (ec) co_return;
  co_await (pump(&visitor, &service) || pump(&service, &visitor));
  auto shutdown = visitor.async_shutdown(use_tuple);
  co_await with_deadline(std::move(shutdown), 1000ms);
}

asio::awaitable<void> accept_tls(tcp::acceptor* acceptor, asio::ssl::context* tls,
                                 std::uint16_t target) {
  for (;;) {
    auto [ec, socket] = co_await acceptor->async_accept(use_tuple);
    if (ec) co_return;
    spawn_logged(acceptor->get_executor(), terminate_tls(std::move(socket), tls, target),
                 "test TLS terminator");
  }
}

class tls_terminator {
 public:
  tls_terminator(const tls::key_pair& leaf, std::uint16_t target) {
    tls_.use_certificate_chain(asio::buffer(leaf.cert_pem));
    tls_.use_private_key(asio::buffer(leaf.key_pem), asio::ssl::context::pem);
    acceptor_.open(tcp::v4());
    acceptor_.bind({asio::ip::address_v4::loopback(), 0});
    acceptor_.listen();
    spawn_logged(ioc_.get_executor(), accept_tls(&acceptor_, &tls_, target), "test TLS accept");
    thread_ = std::thread([this] { ioc_.run(); });
  }
  ~tls_terminator() {
    ioc_.stop();
    thread_.join();
  }
  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

 private:
  asio::ssl::context tls_{asio::ssl::context::tls_server};
  asio::io_context ioc_;
  tcp::acceptor acceptor_{ioc_};
  std::thread thread_;
};

TEST(HttpService, WebSocketEchoOverTls) {
  http_service svc;
  temp_dir dir;
  auto ca = tls::make_ca("test CA", 24h);
  auto leaf = tls::make_leaf(ca, "app", {"app.burrow.localhost"}, {}, 24h);
  auto ca_file = (dir.path / "ca.pem").string();
  std::ofstream(ca_file) << ca.cert_pem;
  tls_terminator terminator(leaf, svc.port());

  std::vector<std::string> messages{"one", "two", std::string(50'000, 'z')};
  EXPECT_EQ(ws_echo_over_tls(terminator.port(), "app.burrow.localhost", ca_file, messages, 5s),
            messages);
  EXPECT_EQ(svc.last_headers()["host"], "app.burrow.localhost");

  // A certificate for another name is refused, and the message says where.
  try {
    ws_echo_over_tls(terminator.port(), "other.burrow.localhost", ca_file, messages, 5s);
    FAIL() << "expected a host name mismatch";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("TLS handshake"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace burrow::test
