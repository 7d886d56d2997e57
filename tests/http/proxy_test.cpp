// The HTTP proxy between two real loopback TCP connections: a raw visitor client and a scripted
// local service, so each test controls every byte on both sides.
#include "http/proxy.hpp"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cctype>
#include <cstdio>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "core/drained.hpp"
#include "harness/net.hpp"

namespace burrow::http {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace std::chrono_literals;

// Reads until `needle` has arrived (returns everything read), or nullopt at EOF or the deadline.
std::optional<std::string> read_until(int fd, std::string_view needle,
                                      std::chrono::milliseconds deadline,
                                      std::string* sofar = nullptr) {
  std::string got = sofar ? *sofar : std::string();
  auto until = std::chrono::steady_clock::now() + deadline;
  char buf[65536];
  while (got.find(needle) == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return std::nullopt;
    got.append(buf, static_cast<std::size_t>(n));
  }
  return got;
}

// Decodes a chunked body that starts at `text`; nullopt if it is not complete and well formed.
std::optional<std::string> dechunk(std::string_view text) {
  std::string out;
  for (;;) {
    auto eol = text.find("\r\n");
    if (eol == std::string_view::npos) return std::nullopt;
    std::size_t size = std::stoul(std::string(text.substr(0, eol)), nullptr, 16);
    text.remove_prefix(eol + 2);
    if (size == 0) return out;
    if (text.size() < size + 2) return std::nullopt;
    out += text.substr(0, size);
    text.remove_prefix(size + 2);
  }
}

asio::awaitable<void> serve_one(tcp::acceptor& acceptor, std::uint16_t local_port,
                                proxy_options options, proxy_result* result,
                                std::atomic<bool>* local_connected, std::atomic<bool>* done) {
  auto visitor_socket = co_await acceptor.async_accept(asio::use_awaitable);
  tcp::socket local_socket(acceptor.get_executor());
  co_await local_socket.async_connect({asio::ip::make_address("127.0.0.1"), local_port},
                                      asio::use_awaitable);
  local_connected->store(true);
  // As the relay's and agent's sockets: each read says whether it emptied the socket.
  report_queued_bytes(visitor_socket);
  report_queued_bytes(local_socket);
  auto visitor = make_tcp_duplex(visitor_socket);
  auto local = make_tcp_duplex(local_socket);
  *result = co_await proxy(*visitor, *local, std::move(options));
  done->store(true);
}

// One visitor connection through the proxy to a local service that runs `script` on its end.
class proxy_rig {
 public:
  explicit proxy_rig(std::function<void(int)> script, proxy_options options = default_options())
      : script_(std::move(script)) {
    local_listen_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ::bind(local_listen_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(local_listen_, 4);
    ::getsockname(local_listen_, reinterpret_cast<sockaddr*>(&a), &len);
    std::uint16_t local_port = ntohs(a.sin_port);
    local_thread_ = std::thread([this] {
      int fd = ::accept(local_listen_, nullptr, nullptr);
      if (fd < 0) return;
      script_(fd);
      ::close(fd);
    });
    asio::co_spawn(
        io_,
        serve_one(acceptor_, local_port, std::move(options), &result_, &local_connected_, &done_),
        asio::detached);
    io_thread_ = std::thread([this] { io_.run_for(30s); });
  }
  ~proxy_rig() {
    io_thread_.join();
    join_local();
    ::close(local_listen_);
  }
  // Waits for the local service's script to return: only then may the test read what the
  // script wrote (ThreadSanitizer rightly flags reading it after finished() alone).
  void join_local() {
    // Wakes an accept that never got its connection. One that did must not be cut short: a
    // thread that reaches accept() only now finds the connection queued, which a shutdown would
    // have reset (the script then never ran).
    if (!local_connected_) ::shutdown(local_listen_, SHUT_RDWR);
    if (local_thread_.joinable()) local_thread_.join();
  }

  static proxy_options default_options() {
    proxy_options o;
    o.forwarded = {"198.51.100.1", "https", "web.burrow.localhost"};
    o.head_timeout = 5s;
    return o;
  }

  int connect() { return test::connect_tcp(acceptor_.local_endpoint().port(), 5s); }
  // Waits for the proxy to finish; false at the deadline.
  bool finished(std::chrono::milliseconds deadline) {
    auto until = std::chrono::steady_clock::now() + deadline;
    while (!done_ && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(10ms);
    if (!done_) io_.stop();
    return done_;
  }
  const proxy_result& result() const { return result_; }

 private:
  std::function<void(int)> script_;
  int local_listen_ = -1;
  std::thread local_thread_;
  asio::io_context io_;
  tcp::acceptor acceptor_{io_, {asio::ip::make_address("127.0.0.1"), 0}};
  proxy_result result_;
  std::atomic<bool> local_connected_{false};  // the local thread's accept will return it
  std::atomic<bool> done_{false};
  std::thread io_thread_;
};

TEST(HttpProxy, PipelinedRequestsAreAnsweredInOrderWithForwardedHeaders) {
  std::string seen_by_local;
  proxy_rig rig([&](int fd) {
    auto heads = read_until(fd, "GET /b", 5s);
    if (!heads) return;
    heads = read_until(fd, "\r\n\r\n", 5s, &*heads);
    auto second = heads->rfind("GET /b");
    if (heads->find("\r\n\r\n", second) == std::string::npos) heads = read_until(fd, "zzz", 1s);
    seen_by_local = heads.value_or("");
    test::write_all(fd,
                    "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nA"
                    "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nB",
                    5s);
    read_until(fd, "never", 5s);  // until the proxy closes
  });
  int fd = rig.connect();
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(test::write_all(fd,
                              "GET /a HTTP/1.1\r\nHost: web\r\nX-Forwarded-For: 6.6.6.6\r\n\r\n"
                              "GET /b HTTP/1.1\r\nHost: web\r\n\r\n",
                              5s));
  auto answers = read_until(fd, "\r\n\r\nB", 5s);
  ASSERT_TRUE(answers);
  EXPECT_LT(answers->find("\r\n\r\nA"), answers->find("\r\n\r\nB"));
  ::shutdown(fd, SHUT_WR);
  EXPECT_TRUE(rig.finished(5s));
  ::close(fd);
  EXPECT_EQ(rig.result().requests, 2u);
  rig.join_local();
  EXPECT_EQ(seen_by_local.find("6.6.6.6"), std::string::npos) << seen_by_local;
  EXPECT_NE(seen_by_local.find("X-Forwarded-For: 198.51.100.1"), std::string::npos);
  EXPECT_NE(seen_by_local.find("X-Forwarded-Proto: https"), std::string::npos);
  EXPECT_NE(seen_by_local.find("X-Forwarded-Host: web"), std::string::npos);
}

// One request through the proxy to a service that reads one head and answers `response`: what
// the visitor got back (up to the body "ok"; nullopt if it never came) and what the service read.
struct exchange {
  std::optional<std::string> answer;
  std::string seen_by_local;
};
exchange exchange_once(proxy_options options, const std::string& request,
                       const std::string& response) {
  exchange out;
  proxy_rig rig(
      [&](int fd) {
        auto got = read_until(fd, "\r\n\r\n", 5s);
        if (!got) return;
        out.seen_by_local = *got;
        test::write_all(fd, response, 5s);
        read_until(fd, "never", 5s);
      },
      std::move(options));
  int fd = rig.connect();
  if (fd < 0) return out;
  if (test::write_all(fd, request, 5s)) out.answer = read_until(fd, "\r\n\r\nok", 5s);
  ::close(fd);
  EXPECT_TRUE(rig.finished(5s));
  rig.join_local();
  return out;
}

// Heads pass as they came: the service's response head reaches the visitor byte for byte (odd
// spacing and reason phrase included), the request head reaches the service with only the
// X-Forwarded-* lines changed, and the callbacks see each request.
TEST(HttpProxy, HeadsPassAsTheyCame) {
  const std::string response_head =
      "HTTP/1.1 200 Fine  Thanks\r\nServer:odd\r\nX-Spaced:   a  b \r\nContent-Length: 2\r\n\r\n";
  auto options = proxy_rig::default_options();
  auto requests = std::make_shared<std::atomic<int>>(0);
  auto logged = std::make_shared<std::vector<std::string>>();
  options.on_request = [requests] { ++*requests; };
  options.on_response = [logged](std::string_view method, std::string_view target,
                                 unsigned status) {
    logged->push_back(std::string(method) + " " + std::string(target) + " " +
                      std::to_string(status));
  };
  auto [answer, seen_by_local] = exchange_once(
      options, "GET /x?y HTTP/1.1\r\nhost:  web \r\nX-Forwarded-Proto: http\r\nA:b\r\n\r\n",
      response_head + "ok");
  ASSERT_TRUE(answer);
  EXPECT_EQ(*answer, response_head + "ok");
  EXPECT_EQ(seen_by_local,
            "GET /x?y HTTP/1.1\r\nhost:  web \r\nA:b\r\nX-Forwarded-For: 198.51.100.1\r\n"
            "X-Forwarded-Proto: https\r\nX-Forwarded-Host: web\r\n\r\n");
  EXPECT_EQ(*requests, 1);
  EXPECT_EQ(*logged, std::vector<std::string>{"GET /x?y 200"});
}

TEST(HttpProxy, ChunkedBodiesStayChunkedBothWays) {
  std::string upload;
  proxy_rig rig([&](int fd) {
    auto got = read_until(fd, "0\r\n\r\n", 5s);
    if (!got) return;
    auto body = got->substr(got->find("\r\n\r\n") + 4);
    upload = dechunk(body).value_or("<bad>");
    test::write_all(fd,
                    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                    "3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n",
                    5s);
    read_until(fd, "never", 5s);
  });
  int fd = rig.connect();
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(test::write_all(fd,
                              "POST /up HTTP/1.1\r\nHost: web\r\nTransfer-Encoding: chunked\r\n\r\n"
                              "5\r\nhello\r\n1;ext=1\r\n \r\n5\r\nworld\r\n0\r\nTrailer: x\r\n\r\n",
                              5s));
  auto answer = read_until(fd, "0\r\n\r\n", 5s);
  ASSERT_TRUE(answer);
  EXPECT_EQ(dechunk(answer->substr(answer->find("\r\n\r\n") + 4)), "abcdefg");
  ::close(fd);
  EXPECT_TRUE(rig.finished(5s));
  rig.join_local();
  EXPECT_EQ(upload, "hello world");
}

TEST(HttpProxy, ContinueThenAnUpgradeTurnsIntoAPipe) {
  std::string from_visitor;
  proxy_rig rig([&](int fd) {
    if (!read_until(fd, "\r\n\r\n", 5s)) return;
    test::write_all(fd,
                    "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 101 Switching Protocols\r\n"
                    "Connection: Upgrade\r\nUpgrade: websocket\r\n\r\nfrom-local",
                    5s);
    from_visitor = read_until(fd, "from-visitor", 5s).value_or("");
    ::shutdown(fd, SHUT_WR);
    read_until(fd, "never", 5s);
  });
  int fd = rig.connect();
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(test::write_all(
      fd, "GET /ws HTTP/1.1\r\nHost: web\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
      5s));
  auto answer = read_until(fd, "from-local", 5s);
  ASSERT_TRUE(answer);
  EXPECT_TRUE(answer->starts_with("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 101")) << *answer;
  ASSERT_TRUE(test::write_all(fd, "from-visitor", 5s));
  auto eof = test::read_until_eof(fd, 5s, 1024);  // the local side's FIN comes through
  EXPECT_TRUE(eof);
  ::shutdown(fd, SHUT_WR);
  EXPECT_TRUE(rig.finished(5s));
  ::close(fd);
  EXPECT_TRUE(rig.result().upgraded);
  rig.join_local();
  EXPECT_NE(from_visitor.find("from-visitor"), std::string::npos);
}

TEST(HttpProxy, ScreenedRequestsNeverReachTheLocalService) {
  std::string seen_by_local = "unset";
  auto options = proxy_rig::default_options();
  options.screen = [](const request_head& h) {
    return h[boost::beast::http::field::authorization] == "Bearer good"
               ? std::string()
               : simple_response(401, "Unauthorized", "no\n");
  };
  {
    proxy_rig rig(
        [&](int fd) { seen_by_local = test::read_until_eof(fd, 5s, 1 << 20).value_or("error"); },
        options);
    int fd = rig.connect();
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(test::write_all(fd, "GET /secret HTTP/1.1\r\nHost: web\r\n\r\n", 5s));
    auto answer = test::read_until_eof(fd, 5s, 1 << 20);
    ASSERT_TRUE(answer);
    EXPECT_TRUE(answer->starts_with("HTTP/1.1 401 Unauthorized")) << *answer;
    ::close(fd);
    EXPECT_TRUE(rig.finished(5s));
  }  // the local service's thread has finished here
  EXPECT_EQ(seen_by_local, "");
}

// Heads whose body framing two readers could read two ways (a length and chunked, two lengths
// that disagree) are answered 400 and never reach the service, so nothing can ride inside them.
TEST(HttpProxy, AmbiguousBodyFramingNeverReachesTheService) {
  for (std::string head : {"POST / HTTP/1.1\r\nHost: web\r\nContent-Length: 5\r\n"
                           "Transfer-Encoding: chunked\r\n\r\n",
                           "POST / HTTP/1.1\r\nHost: web\r\nTransfer-Encoding: chunked\r\n"
                           "Content-Length: 5\r\n\r\n",
                           "POST / HTTP/1.1\r\nHost: web\r\nContent-Length: 5\r\n"
                           "Content-Length: 6\r\n\r\n"}) {
    std::string seen_by_local = "unset";
    {
      proxy_rig rig(
          [&](int fd) { seen_by_local = test::read_until_eof(fd, 5s, 1 << 20).value_or("error"); });
      int fd = rig.connect();
      ASSERT_GE(fd, 0);
      ASSERT_TRUE(
          test::write_all(fd, head + "0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: web\r\n\r\n", 5s));
      auto answer = test::read_until_eof(fd, 5s, 1 << 20);
      ASSERT_TRUE(answer);
      EXPECT_TRUE(answer->starts_with("HTTP/1.1 400 Bad Request")) << *answer;
      ::close(fd);
      EXPECT_TRUE(rig.finished(5s));
    }
    EXPECT_EQ(seen_by_local, "") << head;
  }
}

// The screen reads the fields of a head that then goes on as it came: the request it lets
// through reaches the service byte for byte but for the forwarding lines.
TEST(HttpProxy, TheScreenReadsTheFieldsOfAHeadThatGoesOnAsItCame) {
  auto options = proxy_rig::default_options();
  options.screen = [](const request_head& h) {
    return h.method() == boost::beast::http::verb::get && h.target() == "/secret" &&
                   h[boost::beast::http::field::authorization] == "Bearer good"
               ? std::string()
               : simple_response(401, "Unauthorized", "no\n");
  };
  auto [answer, seen_by_local] = exchange_once(
      options, "GET /secret HTTP/1.1\r\nHost: web\r\nauthorization:  Bearer good\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  ASSERT_TRUE(answer);
  EXPECT_TRUE(answer->starts_with("HTTP/1.1 200 OK")) << *answer;
  EXPECT_EQ(seen_by_local,
            "GET /secret HTTP/1.1\r\nHost: web\r\nauthorization:  Bearer good\r\n"
            "X-Forwarded-For: 198.51.100.1\r\nX-Forwarded-Proto: https\r\nX-Forwarded-Host: web\r\n"
            "\r\n");
}

// A refused upload: the visitor is still sending its body when the answer goes out. The proxy
// reads and drops the rest until the visitor closes, so the visitor finishes sending and reads
// the answer and a clean end of file, never a reset.
TEST(HttpProxy, ARefusalIsReadWholeWhileTheVisitorIsStillSending) {
  auto options = proxy_rig::default_options();
  options.screen = [](const request_head&) {
    return simple_response(403, "Forbidden", "not you\n");
  };
  std::optional<std::string> answer;
  {
    proxy_rig rig([](int fd) { test::read_until_eof(fd, 10s, 1 << 20); }, options);
    int fd = rig.connect();
    ASSERT_GE(fd, 0);
    std::string body = test::deterministic_bytes(4 << 20, 5);
    ASSERT_TRUE(test::write_all(fd,
                                "PUT /big HTTP/1.1\r\nHost: web\r\nContent-Length: " +
                                    std::to_string(body.size()) + "\r\n\r\n",
                                5s));
    bool sent = false;
    std::thread sender([&] {
      sent = test::write_all(fd, body, 10s);
      ::shutdown(fd, SHUT_WR);
    });
    answer = test::read_until_eof(fd, 10s, 1 << 20);
    sender.join();
    EXPECT_TRUE(sent) << "the visitor's upload was cut by a reset";
    ::close(fd);
    EXPECT_TRUE(rig.finished(5s));
  }
  ASSERT_TRUE(answer) << "the answer was cut by a reset";
  EXPECT_TRUE(answer->starts_with("HTTP/1.1 403 Forbidden")) << *answer;
}

// A head longer than the first read (a long cookie, a long header line) reaches the local
// service whole: the start line and the fields before the read's end are not lost.
TEST(HttpProxy, AHeadLongerThanOneReadArrivesWhole) {
  for (std::size_t size : {4000, 5000, 20000, 60000}) {
    std::string seen;
    const std::string head =
        "GET /long HTTP/1.1\r\nHost: web\r\nX-Long: " + std::string(size, 'a') +
        "\r\nX-After: 1\r\n\r\n";
    {
      proxy_rig rig([&](int fd) {
        seen = read_until(fd, "\r\n\r\n", 5s).value_or("");
        test::write_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 5s);
        test::read_until_eof(fd, 5s, 1 << 20);
      });
      int fd = rig.connect();
      ASSERT_GE(fd, 0);
      // In two writes, the first ending inside the long line.
      ASSERT_TRUE(test::write_all(fd, head.substr(0, 3000), 5s));
      std::this_thread::sleep_for(20ms);
      ASSERT_TRUE(test::write_all(fd, head.substr(3000), 5s));
      auto answer = read_until(fd, "ok", 5s);
      ASSERT_TRUE(answer) << size;
      EXPECT_TRUE(answer->starts_with("HTTP/1.1 200")) << size << ": " << *answer;
      ::close(fd);
      EXPECT_TRUE(rig.finished(5s));
      rig.join_local();
    }
    EXPECT_TRUE(seen.starts_with("GET /long HTTP/1.1\r\nHost: web\r\nX-Long: aaa")) << size;
    EXPECT_NE(seen.find(std::string(size, 'a') + "\r\nX-After: 1\r\n"), std::string::npos) << size;
  }
}

TEST(HttpProxy, OversizedAndMalformedHeadsAreAnsweredAndClosed) {
  {
    proxy_rig rig([](int fd) { test::read_until_eof(fd, 5s, 1 << 20); });
    int fd = rig.connect();
    ASSERT_GE(fd, 0);
    test::write_all(fd, "GET / HTTP/1.1\r\nX: " + std::string(max_head_size + 10, 'a'), 5s);
    auto answer = read_until(fd, "\r\n\r\n", 5s);
    ASSERT_TRUE(answer);
    EXPECT_TRUE(answer->starts_with("HTTP/1.1 431")) << *answer;
    ::close(fd);
    EXPECT_TRUE(rig.finished(5s));
  }
  {
    proxy_rig rig([](int fd) { test::read_until_eof(fd, 5s, 1 << 20); });
    int fd = rig.connect();
    ASSERT_GE(fd, 0);
    test::write_all(fd, "GET / HTTP/1.1\r\nno colon here\r\n\r\n", 5s);
    auto answer = read_until(fd, "\r\n\r\n", 5s);
    ASSERT_TRUE(answer);
    EXPECT_TRUE(answer->starts_with("HTTP/1.1 400")) << *answer;
    ::close(fd);
    EXPECT_TRUE(rig.finished(5s));
  }
}

TEST(HttpProxy, HeadResponsesHaveNoBodyAndTheConnectionGoesOn) {
  proxy_rig rig([](int fd) {
    if (!read_until(fd, "\r\n\r\n", 5s)) return;
    test::write_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", 5s);
    if (!read_until(fd, "\r\n\r\n", 5s)) return;
    test::write_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 5s);
    read_until(fd, "never", 5s);
  });
  int fd = rig.connect();
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(test::write_all(fd, "HEAD / HTTP/1.1\r\nHost: web\r\n\r\n", 5s));
  ASSERT_TRUE(read_until(fd, "Content-Length: 100\r\n\r\n", 5s));
  ASSERT_TRUE(test::write_all(fd, "GET / HTTP/1.1\r\nHost: web\r\n\r\n", 5s));
  auto second = read_until(fd, "\r\n\r\nok", 5s);
  ASSERT_TRUE(second);
  ::close(fd);
  EXPECT_TRUE(rig.finished(5s));
  EXPECT_EQ(rig.result().requests, 2u);
}

TEST(HttpProxy, ABodyThatEndsWithTheConnectionIsDeliveredWhole) {
  std::string big = test::deterministic_bytes(3 << 20, 9);
  proxy_rig rig([&](int fd) {
    if (!read_until(fd, "\r\n\r\n", 5s)) return;
    test::write_all(fd, "HTTP/1.0 200 OK\r\nContent-Type: x\r\n\r\n" + big, 10s);
  });
  int fd = rig.connect();
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(test::write_all(fd, "GET /big HTTP/1.1\r\nHost: web\r\n\r\n", 5s));
  auto answer = test::read_until_eof(fd, 10s, 8 << 20);
  ASSERT_TRUE(answer);
  auto body = answer->substr(answer->find("\r\n\r\n") + 4);
  EXPECT_EQ(body.size(), big.size());
  EXPECT_EQ(test::sha256_hex(body), test::sha256_hex(big));
  ::close(fd);
  EXPECT_TRUE(rig.finished(5s));
}

// Reads until `have` holds at least `n` bytes; false at EOF or the deadline.
bool read_to_size(int fd, std::string& have, std::size_t n, std::chrono::milliseconds deadline) {
  auto until = std::chrono::steady_clock::now() + deadline;
  char buf[65536];
  while (have.size() < n) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    ssize_t got = ::recv(fd, buf, sizeof buf, 0);
    if (got <= 0) return false;
    have.append(buf, static_cast<std::size_t>(got));
  }
  return true;
}

// Reads one response whose body is framed by Content-Length or chunked, from `have` and then
// `fd`; returns its body (decoded) and leaves in `have` what follows it.
std::optional<std::string> read_response_body(int fd, std::string& have,
                                              std::chrono::milliseconds deadline) {
  auto head = read_until(fd, "\r\n\r\n", deadline, &have);
  if (!head) return std::nullopt;
  have = *head;
  auto end = have.find("\r\n\r\n") + 4;
  std::string lower_head = have.substr(0, end);
  for (auto& c : lower_head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (auto at = lower_head.find("content-length: "); at != std::string::npos) {
    std::size_t n = std::stoul(lower_head.substr(at + 16));
    if (!read_to_size(fd, have, end + n, deadline)) return std::nullopt;
    std::string body = have.substr(end, n);
    have.erase(0, end + n);
    return body;
  }
  for (;;) {  // chunked: until the whole body decodes
    if (auto body = dechunk(std::string_view(have).substr(end))) {
      have.clear();  // one response at a time here: nothing follows it yet
      return body;
    }
    if (!read_to_size(fd, have, have.size() + 1, deadline)) return std::nullopt;
  }
}

TEST(HttpProxy, BodiesOfEverySizeCrossWholeOnOneConnection) {
  // Sizes around each step of the proxy's growing reads (4 KiB, then 16 KiB) and body pieces
  // (1 KiB, doubling to 16 KiB), large ones, and small ones after large ones.
  const std::vector<std::size_t> sizes = {0,    1,     1023,  1024,  1025,   4095, 4096,
                                          4097, 16383, 16384, 16385, 70000,  7,    250000,
                                          3,    2048,  32769, 1,     100000, 0};
  std::vector<std::string> uploads;
  proxy_rig rig([&](int fd) {
    std::string have;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      auto head = read_until(fd, "\r\n\r\n", 10s, &have);
      if (!head) return;
      have = *head;
      auto end = have.find("\r\n\r\n") + 4;
      if (!read_to_size(fd, have, end + sizes[i], 10s)) return;
      uploads.push_back(have.substr(end, sizes[i]));
      have.erase(0, end + sizes[i]);
      std::string body = test::deterministic_bytes(sizes[i], 100 + i);
      std::string answer;
      if (i % 2 == 0) {
        answer =
            "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
      } else {
        answer = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        std::size_t chunk = 1 + i * 997;  // chunks of another size in each response
        for (std::size_t at = 0; at < body.size(); at += chunk) {
          std::size_t n = std::min(chunk, body.size() - at);
          char size[32];
          std::snprintf(size, sizeof size, "%zx\r\n", n);
          answer += size + body.substr(at, n) + "\r\n";
        }
        answer += "0\r\n\r\n";
      }
      if (!test::write_all(fd, answer, 10s)) return;
    }
    read_until(fd, "never", 5s);
  });
  int fd = rig.connect();
  ASSERT_GE(fd, 0);
  std::string have;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    std::string upload = test::deterministic_bytes(sizes[i], 200 + i);
    ASSERT_TRUE(test::write_all(fd,
                                "POST /" + std::to_string(i) +
                                    " HTTP/1.1\r\nHost: web\r\nContent-Length: " +
                                    std::to_string(upload.size()) + "\r\n\r\n" + upload,
                                10s));
    auto body = read_response_body(fd, have, 10s);
    ASSERT_TRUE(body) << "response " << i;
    EXPECT_EQ(body->size(), sizes[i]) << "response " << i;
    EXPECT_EQ(test::sha256_hex(*body),
              test::sha256_hex(test::deterministic_bytes(sizes[i], 100 + i)))
        << "response " << i;
  }
  ::close(fd);
  EXPECT_TRUE(rig.finished(5s));
  rig.join_local();
  ASSERT_EQ(uploads.size(), sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i)
    EXPECT_EQ(test::sha256_hex(uploads[i]),
              test::sha256_hex(test::deterministic_bytes(sizes[i], 200 + i)))
        << "upload " << i;
  EXPECT_EQ(rig.result().requests, sizes.size());
}

TEST(HttpProxy, SmallMessagesKeepSmallBuffers) {
  // The 1 KiB benchmark's traffic: every proxied HTTPS visitor held 16 KiB for each side's
  // reads and for each body piece, whatever the messages' size.
  const std::string body = test::deterministic_bytes(1024, 7);
  constexpr int requests = 50;
  proxy_rig rig([&](int fd) {
    std::string have;
    for (int i = 0; i < requests; ++i) {
      auto head = read_until(fd, "\r\n\r\n", 10s, &have);
      if (!head) return;
      have = head->substr(head->find("\r\n\r\n") + 4);
      if (!test::write_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 1024\r\n\r\n" + body, 10s))
        return;
    }
    read_until(fd, "never", 5s);
  });
  int fd = rig.connect();
  ASSERT_GE(fd, 0);
  std::string have;
  for (int i = 0; i < requests; ++i) {
    ASSERT_TRUE(test::write_all(fd, "GET /1k HTTP/1.1\r\nHost: web\r\n\r\n", 10s));
    auto got = read_response_body(fd, have, 10s);
    ASSERT_TRUE(got) << "response " << i;
    ASSERT_EQ(*got, body);
  }
  ::close(fd);
  EXPECT_TRUE(rig.finished(5s));
  EXPECT_EQ(rig.result().requests, static_cast<std::size_t>(requests));
  EXPECT_LE(rig.result().buffer_capacity, 16u * 1024);
}

// Polls proxy_read_buffer_bytes() until it reads `want`; false at the deadline.
bool read_buffers_come_to(std::size_t want, std::chrono::milliseconds deadline) {
  auto until = std::chrono::steady_clock::now() + deadline;
  while (proxy_read_buffer_bytes() != want) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

TEST(HttpProxy, ReadBuffersAreHeldOnlyWhileBytesMoveAndLargeOnesGoBackBetweenMessages) {
  // A keep-alive visitor spends most of its life between requests. The proxy held a read buffer
  // for each side all that time (4 KiB each, 16 KiB once a read had filled one), and kept a large
  // response's body piece (16 KiB) and outbox (over 32 KiB) for the rest of the connection.
  const std::string small = test::deterministic_bytes(1024, 11);
  const std::string large = test::deterministic_bytes(300000, 12);
  const std::vector<const std::string*> bodies = {&small, &large, &small};
  proxy_rig rig([&](int fd) {
    std::string have;
    for (const std::string* body : bodies) {
      auto head = read_until(fd, "\r\n\r\n", 10s, &have);
      if (!head) return;
      have = head->substr(head->find("\r\n\r\n") + 4);
      std::string response =
          "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body->size()) + "\r\n\r\n";
      if (!test::write_all(fd, response + *body, 10s)) return;
    }
    read_until(fd, "never", 5s);
  });
  int fd = rig.connect();
  ASSERT_GE(fd, 0);
  std::string have;
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    ASSERT_TRUE(test::write_all(fd, "GET /r HTTP/1.1\r\nHost: web\r\n\r\n", 10s))
        << "request " << i;
    auto got = read_response_body(fd, have, 10s);
    ASSERT_TRUE(got) << "response " << i;
    ASSERT_EQ(*got, *bodies[i]) << "response " << i;
    // Waiting for the next request: neither side holds a read buffer (well before the head
    // deadline, 5 s, ends the connection and with it every buffer).
    EXPECT_TRUE(read_buffers_come_to(0, 2s))
        << "after response " << i << ": " << proxy_read_buffer_bytes() << " bytes held";
  }
  ::close(fd);
  EXPECT_TRUE(rig.finished(5s));
  EXPECT_EQ(rig.result().requests, bodies.size());
  // What is left at the end: the read that found the visitor's EOF (4 KiB), the small body
  // piece and outboxes. Kept, the large response's piece and outbox came to over 20 KiB more.
  EXPECT_LE(rig.result().buffer_capacity, 8u * 1024);
}

TEST(HttpProxy, ALocalServiceThatClosesWithoutAnswerGives502) {
  proxy_rig rig([](int fd) { read_until(fd, "\r\n\r\n", 5s); });
  int fd = rig.connect();
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(test::write_all(fd, "GET / HTTP/1.1\r\nHost: web\r\n\r\n", 5s));
  auto answer = test::read_until_eof(fd, 5s, 1 << 20);
  ASSERT_TRUE(answer);
  EXPECT_TRUE(answer->starts_with("HTTP/1.1 502")) << *answer;
  ::close(fd);
  EXPECT_TRUE(rig.finished(5s));
}

TEST(HttpProxy, AVisitorThatSendsNoRequestIsCutAtTheHeadDeadline) {
  auto options = proxy_rig::default_options();
  options.head_timeout = 300ms;
  proxy_rig rig([](int fd) { test::read_until_eof(fd, 5s, 1024); }, options);
  int fd = rig.connect();
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(test::write_all(fd, "GET / HTTP/1.1\r\nHo", 5s));  // and then nothing
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(rig.finished(5s));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  EXPECT_NE(rig.result().error.find("no request"), std::string::npos) << rig.result().error;
  ::close(fd);
}

}  // namespace
}  // namespace burrow::http
