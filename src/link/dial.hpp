// Dialling the relay: resolve, TCP, TLS with the relay's pin or CA, hello and welcome. Shared by
// the agent and `burrow connect`; the caller decides what a failure means for it.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "link/link.hpp"
#include "proto/control.hpp"

namespace burrow::link {

struct dial_options {
  std::string relay;                         // HOST:PORT, as the user gave it (for messages)
  std::string host;                          // parsed from relay
  std::string port;                          // parsed from relay
  std::string relay_pin;                     // canonical sha256:... or empty
  std::string relay_ca;                      // PEM file for chain verification when there is no pin
  std::chrono::milliseconds timeout{10000};  // per step
  std::string link_name;                     // for logs
  // tls: offer sealed frames; full: everything in the link's TLS; none: ask for a plain link.
  link_encryption encryption = link_encryption::tls;
};

// Why a dial failed: `retry` is worth another try later; the others will fail again as they are.
enum class dial_failure { none, retry, bad_token, relay_identity, refused };

struct dial_result {
  std::shared_ptr<class link> link;
  dial_failure failure = dial_failure::none;
  std::string error;  // for the user: what happened and what to do
};

boost::asio::awaitable<dial_result> dial_relay(dial_options options, boost::asio::ssl::context& tls,
                                               proto::hello hello);

}  // namespace burrow::link
