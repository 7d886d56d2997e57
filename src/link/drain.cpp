// Graceful stop of links: go-away, drain, close, flush.
#include "link/drain.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/duration.hpp"
#include "link/link.hpp"

namespace burrow::link {

namespace asio = boost::asio;

asio::awaitable<void> drain_links(std::vector<std::shared_ptr<link>> links,
                                  const std::atomic<std::size_t>& active,
                                  std::chrono::milliseconds limit, std::string who) {
  std::string going = who + " stopping";
  for (auto& l : links)
    asio::post(l->executor(), [l, going] { l->go_away(proto::stream_status::going_away, going); });
  if (active > 0)
    spdlog::info("draining {} open streams (up to {})", active.load(), format_duration(limit));
  asio::steady_timer timer(co_await asio::this_coro::executor);
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (active > 0 && std::chrono::steady_clock::now() < deadline) {
    timer.expires_after(std::chrono::milliseconds(20));
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  if (active > 0) spdlog::warn("drain deadline passed; closing {} streams", active.load());
  std::string closed = who + " stopped";
  for (auto& l : links) asio::post(l->executor(), [l, closed] { l->close(closed); });
  // Give the links a moment to flush their last frames; each link's own coroutine holds it. They
  // are usually done within a millisecond, and a restart waits for this process to exit: look
  // often.
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < deadline &&
         std::any_of(links.begin(), links.end(), [](auto& l) { return l.use_count() > 1; })) {
    timer.expires_after(std::chrono::milliseconds(1));
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  }
}

}  // namespace burrow::link
