// A small HTTP listener for `GET /metrics` (Prometheus) and `GET /healthz`. One request per
// connection, a bounded head, a deadline on every connection and a cap on connections at once.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>

#include "core/metrics.hpp"

namespace burrow {

// Accepts until the acceptor closes. `m` must outlive the loop.
boost::asio::awaitable<void> serve_metrics(boost::asio::ip::tcp::acceptor& acceptor,
                                           const metrics& m, std::chrono::milliseconds deadline);

}  // namespace burrow
