// HTTP/1.1 between a visitor and the local service, one local connection per visitor connection:
// each request head is checked and stamped with X-Forwarded-*, bodies stream through in pieces
// (never whole), pipelined requests keep their order, 1xx answers pass, and an accepted upgrade
// (WebSocket) turns the connection into a plain byte pipe both ways.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "http/duplex.hpp"
#include "http/forward_head.hpp"

namespace burrow::http {

struct proxy_options {
  forwarded_for forwarded;
  // Longest wait for a request head: the keep-alive idle time, and the bound on slow senders.
  std::chrono::milliseconds head_timeout{std::chrono::seconds(60)};
  // Sees each request head before it is forwarded: returns a complete response to send instead
  // (the connection then closes), or an empty string to let the request through.
  std::function<std::string(const request_head&)> screen;
  // After each request head that is let through, before it is forwarded (reads no fields, so it
  // costs no parse of them).
  std::function<void()> on_request;
  // After each response head: the request's method and target, and the status (for logs).
  std::function<void(std::string_view method, std::string_view target, unsigned status)>
      on_response;
};

struct proxy_result {
  std::size_t requests = 0;
  bool upgraded = false;
  std::string error;  // why it ended early, for a log line; empty when it ended cleanly
  // Bytes of buffer the proxy held when it ended: both sides' read buffers, body pieces and
  // outgoing bytes (for tests; small messages keep them small).
  std::size_t buffer_capacity = 0;
};

// Reads the request head (a bounded while), sends `response`, half-closes, and waits for the
// visitor to close its side, so that nothing it sent is answered with a reset.
boost::asio::awaitable<void> answer_and_close(duplex& visitor, std::string response);

// Runs until both directions are done. Neither duplex is closed; on an error both are aborted.
boost::asio::awaitable<proxy_result> proxy(duplex& visitor, duplex& local, proxy_options options);

// What every proxy in this process holds for its reads right now: a side has a read buffer only
// while it has bytes in hand, none while it waits for them.
std::size_t proxy_read_buffer_bytes();

}  // namespace burrow::http
