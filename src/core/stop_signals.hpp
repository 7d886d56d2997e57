// SIGINT and SIGTERM: the first starts a graceful stop, a second one stops at once.
#pragma once

#include <spdlog/spdlog.h>

#include <boost/asio/signal_set.hpp>
#include <functional>

namespace burrow {

inline void handle_stop_signals(boost::asio::signal_set& signals, std::function<void(int)> graceful,
                                std::function<void()> immediate) {
  signals.async_wait([&signals, graceful, immediate](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    spdlog::info("received {}; stopping gracefully (send it again to stop at once)",
                 sig == SIGINT ? "SIGINT" : "SIGTERM");
    graceful(sig);
    signals.async_wait([immediate](const boost::system::error_code& ec2, int) {
      if (ec2) return;
      spdlog::warn("second signal: stopping now");
      immediate();
    });
  });
}

}  // namespace burrow
