// Giving freed heap memory back to the system.
#include "core/heap.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace burrow {

heap_usage heap_now() {
#if defined(__GLIBC__)
  const struct mallinfo2 m = ::mallinfo2();
  return {m.uordblks, m.fordblks};
#else
  return {};
#endif
}

bool heap_release() {
#if defined(__GLIBC__)
  return ::malloc_trim(0) != 0;
#else
  return false;
#endif
}

bool heap_trimmer::due(clock::time_point now) {
  if (last_ && now - *last_ < every_) return false;
  last_ = now;
  return true;
}

std::optional<std::size_t> heap_trimmer::tick(clock::time_point now) {
  if (!due(now)) return std::nullopt;
  const heap_usage usage = heap_now();
  if (usage.free < min_free) return std::nullopt;
  heap_release();
  return usage.free;
}

namespace {
double mib(std::size_t bytes) {
  return static_cast<double>(bytes) / (1 << 20);
}
}  // namespace

boost::asio::awaitable<void> trim_heap_periodically(const std::atomic<bool>& stopping) {
  namespace asio = boost::asio;
  asio::steady_timer timer(co_await asio::this_coro::executor);
  heap_trimmer heap;
  // The first look a second after the start (a restarted relay's agents all reconnect then),
  // then once a period; the process's shutdown stops the io_context, so no wait delays an exit.
  auto wait = std::chrono::duration_cast<heap_trimmer::clock::duration>(std::chrono::seconds(1));
  while (!stopping) {
    timer.expires_after(wait);
    wait = heap.period();
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    const auto now = heap_trimmer::clock::now();
    if (const auto released = heap.tick(now)) {
      const auto took =
          std::chrono::duration_cast<std::chrono::microseconds>(heap_trimmer::clock::now() - now);
      const heap_usage after = heap_now();
      spdlog::debug(
          "returned the free pages of {:.1f} MiB of free heap to the system in {} us; "
          "{:.1f} MiB in use, {:.1f} MiB free in the heaps",
          mib(*released), took.count(), mib(after.in_use), mib(after.free));
    } else if (spdlog::should_log(spdlog::level::trace)) {
      // A look that found too little to return: at trace level, as it comes every period.
      const heap_usage usage = heap_now();
      spdlog::trace(
          "{:.1f} MiB free in the heaps, under the {:.0f} MiB worth returning; {:.1f} MiB "
          "in use",
          mib(usage.free), mib(heap_trimmer::min_free), mib(usage.in_use));
    }
  }
}

}  // namespace burrow
