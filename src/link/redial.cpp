// The redial loop: one log line per outage burst, backoff reset by every link that worked, and
// a head start after a relay that said it was going away.
#include "link/redial.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/backoff.hpp"
#include "core/duration.hpp"
#include "core/log.hpp"

namespace burrow::link {

namespace asio = boost::asio;

asio::awaitable<void> redial(redial_plan plan) {
  backoff delays(plan.backoff_first, plan.backoff_max);
  log_limiter unreachable_log(std::chrono::seconds(10));
  asio::steady_timer timer(co_await asio::this_coro::executor);
  bool first = true;
  while (!*plan.stopping) {
    auto dialling = plan.dial();
    auto result = co_await std::move(dialling);
    if (first && plan.first_attempt_done) plan.first_attempt_done();
    first = false;
    if (*plan.stopping) co_return;
    if (result.failure != dial_failure::none && result.failure != dial_failure::retry) {
      plan.fatal(result);
      co_return;
    }
    if (result.link) {
      delays.reset();
      spdlog::info("link {} connected to relay {} ({})", plan.index, plan.relay,
                   result.link->protection());
      auto serving = plan.serve(result.link);
      std::string reason = co_await std::move(serving);
      if (*plan.stopping) co_return;
      spdlog::warn("link {} to relay {} lost: {}; reconnecting", plan.index, plan.relay, reason);
      // Told it was going away: most likely a restart, whose successor listens within
      // milliseconds. Dial again sooner, then back off as usual.
      if (result.link->peer_going_away()) delays.restart_soon();
    } else if (unreachable_log.allow()) {
      spdlog::warn("relay {} unreachable: {}; retrying (every {} at most)", plan.relay,
                   result.error, format_duration(plan.backoff_max));
    }
    timer.expires_after(delays.next());
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  }
}

}  // namespace burrow::link
