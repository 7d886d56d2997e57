// Starting pebble and its mock DNS for ACME tests.
#include "harness/pebble.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <fstream>
#include <regex>
#include <stdexcept>

#include "acme/https.hpp"
#include "harness/process.hpp"
#include "tls/certs.hpp"

namespace burrow::test {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

constexpr const char* pebble_binary = "/usr/bin/pebble";
constexpr const char* challtestsrv_binary = "/usr/bin/pebble-challtestsrv";

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace

std::uint16_t free_dual_port() {
  for (int attempt = 0; attempt < 50; ++attempt) {
    int tcp = ::socket(AF_INET, SOCK_STREAM, 0);
    int udp = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    bool ok = ::bind(tcp, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
              ::getsockname(tcp, reinterpret_cast<sockaddr*>(&a), &len) == 0 &&
              ::bind(udp, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(tcp);
    ::close(udp);
    if (ok) return ntohs(a.sin_port);
  }
  throw std::runtime_error("no free loopback port for TCP and UDP");
}

bool pebble_server::available() {
  return fs::exists(pebble_binary) && fs::exists(challtestsrv_binary);
}

pebble_server::pebble_server(fs::path dir, std::uint16_t tls_port, std::chrono::seconds validity)
    : dir_(std::move(dir)) {
  // Pebble's own API certificate, from a CA only this test trusts.
  auto ca = tls::make_ca("burrow ACME test CA", 24h);
  auto api = tls::make_leaf(ca, "localhost", {"localhost"}, {"127.0.0.1"}, 24h);
  write_text(dir_ / "pebble-api-ca.pem", ca.cert_pem);
  write_text(dir_ / "pebble-api-cert.pem", api.cert_pem);
  write_text(dir_ / "pebble-api-key.pem", api.key_pem);

  std::uint16_t dns_port = free_dual_port();
  std::uint16_t dns_management_port = free_dual_port();
  api_port_ = free_dual_port();
  management_port_ = free_dual_port();
  const std::string loopback = "127.0.0.1:";
  dns_ = child_process::start(
      "challtestsrv",
      {challtestsrv_binary, "-defaultIPv4", "127.0.0.1", "-defaultIPv6", "", "-dns01",
       loopback + std::to_string(dns_port), "-http01", "", "-https01", "", "-tlsalpn01", "",
       "-management", loopback + std::to_string(dns_management_port)});
  if (!dns_ || !dns_->wait_for_line(std::regex("Starting management server"), 15s))
    throw std::runtime_error("pebble-challtestsrv did not start");

  write_text(dir_ / "pebble.json",
             R"({"pebble":{"listenAddress":")" + loopback + std::to_string(api_port_) +
                 R"(","managementListenAddress":")" + loopback + std::to_string(management_port_) +
                 R"(","certificate":")" + (dir_ / "pebble-api-cert.pem").string() +
                 R"(","privateKey":")" + (dir_ / "pebble-api-key.pem").string() +
                 R"(","httpPort":)" + std::to_string(free_dual_port()) + R"(,"tlsPort":)" +
                 std::to_string(tls_port) +
                 R"(,"ocspResponderURL":"","externalAccountBindingRequired":false)" +
                 (validity.count() > 0
                      ? R"(,"certificateValidityPeriod":)" + std::to_string(validity.count())
                      : std::string()) +
                 "}}");
  pebble_ = child_process::start(
      "pebble",
      {pebble_binary, "-config", (dir_ / "pebble.json").string(), "-dnsserver",
       loopback + std::to_string(dns_port), "-strict"},
      {{"PEBBLE_VA_NOSLEEP", "1"}, {"PEBBLE_WFE_NONCEREJECT", "0"}, {"PEBBLE_AUTHZREUSE", "0"}});
  if (!pebble_ || !pebble_->wait_for_line(std::regex("ACME directory available at"), 20s))
    throw std::runtime_error("pebble did not start");
}

pebble_server::~pebble_server() = default;

std::string pebble_server::directory_url() const {
  return "https://127.0.0.1:" + std::to_string(api_port_) + "/dir";
}

std::string pebble_server::ca_file() const {
  return (dir_ / "pebble-api-ca.pem").string();
}

std::string pebble_server::root_pem() {
  boost::asio::io_context io;
  boost::asio::ssl::context tls = acme::make_acme_client_context();
  acme::https_request get;
  get.url =
      *acme::parse_https_url("https://127.0.0.1:" + std::to_string(management_port_) + "/roots/0");
  auto result = boost::asio::co_spawn(
      io, acme::https_exchange(&tls, ca_file(), std::move(get), 10s), boost::asio::use_future);
  io.run_for(15s);
  if (result.wait_for(0s) != std::future_status::ready) return {};
  auto r = result.get();
  return r.error.empty() && r.status == 200 ? r.body : std::string();
}

}  // namespace burrow::test
