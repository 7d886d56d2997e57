// The ACME client against a scripted HTTPS server, for what a real CA will not do on demand:
// badNonce, problem documents, oversized and missing responses.
#include "acme/client.hpp"

#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "acme/jws.hpp"
#include "core/secret.hpp"
#include "core/spawn.hpp"
#include "tls/contexts.hpp"

namespace burrow::acme {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
namespace json = boost::json;
namespace fs = std::filesystem;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

using request_t = http::request<http::string_body>;
using response_t = http::response<http::string_body>;
// Gets the request and the server's base URL; nullopt: read the request and never answer.
using handler_t = std::function<std::optional<response_t>(const request_t&, const std::string&)>;

asio::awaitable<void> serve_one(tcp::socket socket, asio::ssl::context* tls, handler_t* handler,
                                std::string base) {
  asio::ssl::stream<tcp::socket> stream(std::move(socket), *tls);
  auto [hs] = co_await stream.async_handshake(asio::ssl::stream_base::server, use_tuple);
  if (hs) co_return;
  boost::beast::flat_buffer buffer;
  request_t request;
  auto [read_ec, n] = co_await http::async_read(stream, buffer, request, use_tuple);
  if (read_ec) co_return;
  auto response = (*handler)(request, base);
  if (!response) {
    asio::steady_timer forever(stream.get_executor(), 1h);
    co_await forever.async_wait(use_tuple);
    co_return;
  }
  response->version(11);
  response->keep_alive(false);
  response->prepare_payload();
  co_await http::async_write(stream, *response, use_tuple);
}

asio::awaitable<void> accept_loop(tcp::acceptor* acceptor, asio::ssl::context* tls,
                                  handler_t* handler) {
  for (;;) {
    auto [ec, socket] = co_await acceptor->async_accept(use_tuple);
    if (ec == asio::error::operation_aborted || !acceptor->is_open()) co_return;
    if (ec) continue;
    std::string base = "https://127.0.0.1:" + std::to_string(acceptor->local_endpoint().port());
    spawn_logged(acceptor->get_executor(), serve_one(std::move(socket), tls, handler, base),
                 "scripted ACME server");
  }
}

// An HTTPS server on 127.0.0.1 whose every answer comes from a handler, on its own thread.
class scripted_server {
 public:
  scripted_server(const tls::key_pair& identity, handler_t handler)
      : tls_(tls::make_web_server_context(identity)),
        handler_(std::move(handler)),
        acceptor_(io_, tcp::endpoint(asio::ip::address_v4::loopback(), 0)) {
    spawn_logged(io_.get_executor(), accept_loop(&acceptor_, &tls_, &handler_), "accept loop");
    thread_ = std::thread([this] { io_.run(); });
  }
  ~scripted_server() {
    io_.stop();
    thread_.join();
  }
  std::string url(std::string_view path) const {
    return "https://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()) +
           std::string(path);
  }

 private:
  asio::ssl::context tls_;
  handler_t handler_;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::thread thread_;
};

response_t reply(unsigned status, std::string body, std::string nonce = {},
                 std::string location = {}) {
  response_t r(static_cast<http::status>(status), 11);
  r.set(http::field::content_type, status >= 400 ? "application/problem+json" : "application/json");
  if (!nonce.empty()) r.set("Replay-Nonce", nonce);
  if (!location.empty()) r.set(http::field::location, location);
  r.body() = std::move(body);
  return r;
}

std::string problem(std::string_view type, std::string_view detail) {
  return json::serialize(
      json::object{{"type", std::string("urn:ietf:params:acme:error:") + std::string(type)},
                   {"detail", detail}});
}

// The nonce inside a request's JWS protected header.
std::string nonce_of(const request_t& r) {
  auto jws = json::parse(r.body()).as_object();
  auto header = json::parse(*base64url_decode(jws.at("protected").as_string())).as_object();
  return std::string(header.at("nonce").as_string());
}

class AcmeClient : public ::testing::Test {
 protected:
  AcmeClient() {
    dir_ = fs::temp_directory_path() / ("burrow-acme-client-" + random_token().substr(4, 12));
    fs::create_directories(dir_);
    auto ca = tls::make_ca("scripted ACME CA", 1h);
    identity_ = tls::make_leaf(ca, "localhost", {"localhost"}, {"127.0.0.1"}, 1h);
    std::ofstream(dir_ / "ca.pem") << ca.cert_pem;
  }
  ~AcmeClient() override { fs::remove_all(dir_); }

  acme_request request(const scripted_server& server) {
    acme_request r;
    r.directory_url = server.url("/dir");
    r.ca_file = (dir_ / "ca.pem").string();
    r.account_key_pem = make_account_key();
    r.domain = "app.burrow.test";
    r.cert_key_pem = tls::make_self_signed("a", {"a"}, 1h).key_pem;
    r.install_challenge = [](std::string, tls::key_pair) {};
    r.remove_challenge = [](std::string) {};
    r.timeouts.request = 2s;
    r.timeouts.total = 10s;
    return r;
  }

  static acme_result obtain(acme_request r) {
    asio::io_context io;
    auto result = asio::co_spawn(io, obtain_certificate(std::move(r)), asio::use_future);
    io.run_for(20s);
    if (result.wait_for(0s) != std::future_status::ready) {
      ADD_FAILURE() << "obtain_certificate did not finish";
      return {};
    }
    return result.get();
  }

  // A directory pointing back at the server whose base URL is `base`.
  static std::string directory(const std::string& base) {
    return json::serialize(json::object{{"newNonce", base + "/nonce"},
                                        {"newAccount", base + "/account"},
                                        {"newOrder", base + "/order"}});
  }

  fs::path dir_;
  tls::key_pair identity_;
};

TEST_F(AcmeClient, RetriesOnceOnBadNonceWithTheNonceItWasGiven) {
  std::mutex mutex;
  std::vector<std::string> account_nonces;
  scripted_server server(
      identity_, [&](const request_t& r, const std::string& base) -> std::optional<response_t> {
        std::lock_guard lock(mutex);
        if (r.target() == "/dir") return reply(200, directory(base));
        if (r.target() == "/nonce") return reply(200, "", "nonce0");
        if (r.target() == "/account") {
          account_nonces.push_back(nonce_of(r));
          if (account_nonces.size() == 1) return reply(400, problem("badNonce", "stale"), "nonce1");
          return reply(201, R"({"status":"valid"})", "nonce2", base + "/acct/1");
        }
        return reply(403, problem("rejectedIdentifier", "not this name\x01"), "nonce3");
      });
  auto result = obtain(request(server));
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.error,
            "ACME: creating the order: HTTP 403 urn:ietf:params:acme:error:rejectedIdentifier: "
            "not this name");
  std::lock_guard lock(mutex);
  EXPECT_EQ(account_nonces, (std::vector<std::string>{"nonce0", "nonce1"}));
}

TEST_F(AcmeClient, GivesUpAfterASecondBadNonce) {
  std::atomic<int> posts{0};
  scripted_server server(
      identity_, [&](const request_t& r, const std::string& base) -> std::optional<response_t> {
        if (r.target() == "/dir") return reply(200, directory(base));
        if (r.target() == "/nonce") return reply(200, "", "n");
        ++posts;
        return reply(400, problem("badNonce", "always"), "n");
      });
  auto result = obtain(request(server));
  EXPECT_NE(result.error.find("registering the account: HTTP 400 "
                              "urn:ietf:params:acme:error:badNonce: always"),
            std::string::npos)
      << result.error;
  EXPECT_EQ(posts.load(), 2);
}

TEST_F(AcmeClient, BoundsTheResponseSize) {
  scripted_server server(
      identity_, [](const request_t&, const std::string& base) -> std::optional<response_t> {
        return reply(200, std::string(2 * 1024 * 1024, ' ') + directory(base));
      });
  auto result = obtain(request(server));
  EXPECT_FALSE(result.ok());
  EXPECT_NE(result.error.find("cannot read the response"), std::string::npos) << result.error;
}

TEST_F(AcmeClient, EachRequestHasADeadline) {
  scripted_server server(
      identity_,
      [](const request_t&, const std::string&) -> std::optional<response_t> { return {}; });
  auto r = request(server);
  r.timeouts.request = 300ms;
  auto started = std::chrono::steady_clock::now();
  auto result = obtain(std::move(r));
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
  EXPECT_NE(result.error.find("no response from 127.0.0.1:"), std::string::npos) << result.error;
  EXPECT_NE(result.error.find("within 300 ms"), std::string::npos) << result.error;
}

TEST_F(AcmeClient, RefusesNonHttpsUrlsFromTheDirectory) {
  scripted_server server(
      identity_, [](const request_t&, const std::string&) -> std::optional<response_t> {
        return reply(200,
                     R"({"newNonce":"http://127.0.0.1:1/nonce","newAccount":"x","newOrder":"y"})");
      });
  auto result = obtain(request(server));
  EXPECT_NE(result.error.find("not an https URL"), std::string::npos) << result.error;
}

TEST_F(AcmeClient, RefusesAnUnreadableAccountKeyWithoutEchoingIt) {
  scripted_server server(identity_,
                         [](const request_t&, const std::string&) -> std::optional<response_t> {
                           return reply(500, "");
                         });
  auto r = request(server);
  r.account_key_pem = "-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n";
  auto result = obtain(std::move(r));
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.error.find("nope"), std::string::npos);  // key material is never echoed
}

}  // namespace
}  // namespace burrow::acme
