// One HTTPS request and its response for the ACME client: a connection per exchange, the
// server verified against a CA file and its host name, the response bounded in size and time.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <cstddef>
#include <string>

#include "acme/url.hpp"

namespace burrow::acme {

inline constexpr std::size_t max_response_body = 1024 * 1024;

struct https_request {
  std::string method = "GET";  // GET, HEAD or POST
  https_url url;
  std::string body;
  std::string content_type;  // for POST
  std::string accept;        // empty: none
};

struct https_response {
  std::string error;  // transport failure or deadline, empty when a response arrived
  unsigned status = 0;
  std::string body;
  std::string content_type;
  std::string location;
  std::string replay_nonce;
  std::string retry_after;
};

// A client context for ACME servers: TLS 1.2 or 1.3, peers verified (see `ca_file` below).
boost::asio::ssl::context make_acme_client_context();

// Sends `request` over a new TLS connection and reads the response (body at most
// max_response_body), all within `limit`. The server's certificate must chain to `ca_file`
// (a PEM bundle; empty: the system store) and name the URL's host.
boost::asio::awaitable<https_response> https_exchange(boost::asio::ssl::context* tls,
                                                      std::string ca_file, https_request request,
                                                      std::chrono::milliseconds limit);

}  // namespace burrow::acme
