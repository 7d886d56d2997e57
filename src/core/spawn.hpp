// Starts a coroutine that nobody awaits, logging whatever escapes it instead of losing it.
#pragma once

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <exception>
#include <string>

namespace burrow {

template <class Executor, class Awaitable>
void spawn_logged(Executor ex, Awaitable&& a, std::string what) {
  boost::asio::co_spawn(ex, std::forward<Awaitable>(a),
                        [what = std::move(what)](std::exception_ptr e) {
                          if (!e) return;
                          try {
                            std::rethrow_exception(e);
                          } catch (const std::exception& x) {
                            spdlog::error("{}: unexpected error: {}", what, x.what());
                          }
                        });
}

}  // namespace burrow
