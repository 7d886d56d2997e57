// Giving freed heap memory back to the system.
//
// glibc's free() returns memory to the kernel only from the top of a heap. After a burst of
// connections (a flood of idle handshakes, a thousand visitors that came and went) the memory
// they used sits free in the middle of the heaps of every worker thread's arena, between blocks
// still in use, and stays resident: the relay ended the soak test's floods about 8 MiB above its
// baseline with 5 to 7 MiB of it free in the heaps. malloc_trim(0) walks every arena and hands
// each whole free page back (madvise), wherever it lies.
//
// heap_trimmer does that at most every 10 s, when at least a mebibyte sits free. A trim costs the
// thread that calls it 2.3 to 4.5 ms of CPU with 2 to 9 MiB free (during the soak test, on the
// 2-core development host), and the next connections may fault some of those pages in again.
// Under a steady load little is free: at 1,000 keep-alive connections the relay never trimmed.
// After 5 s of 1,000 new connections each (bench/burst-memory.sh) the agent came back from 25 to
// 28 MiB to 19 to 20 MiB within 12 s, where without the trim it stayed. A trim cannot return a
// page with one live block on it.
#pragma once

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <optional>

namespace burrow {

struct heap_usage {
  std::size_t in_use = 0;  // bytes in allocated blocks, over every arena
  std::size_t free = 0;    // bytes in free blocks the heaps hold, resident or not
};

// What malloc's arenas hold now (mallinfo2; zeros where the C library has none).
heap_usage heap_now();

// Hands the free pages of every arena back to the system (malloc_trim(0)). True when any were.
bool heap_release();

class heap_trimmer {
 public:
  using clock = std::chrono::steady_clock;
  static constexpr std::size_t min_free = std::size_t{1} << 20;

  explicit heap_trimmer(clock::duration every = std::chrono::seconds(10)) : every_(every) {}

  clock::duration period() const { return every_; }

  // Whether a period has passed since the last look (or this is the first); a true starts the
  // next period.
  bool due(clock::time_point now);
  // Called from a periodic task: when due, and at least min_free is free, releases it. Returns
  // the heaps' free bytes at a release, nullopt when there was none.
  std::optional<std::size_t> tick(clock::time_point now);

 private:
  clock::duration every_;
  std::optional<clock::time_point> last_;
};

// A heap_trimmer's tick a second after the start, then once a period (10 s) until `stopping`, on
// the calling coroutine's executor; each release is logged at debug level with what was free and
// how long it took, each look that finds too little to return at trace level. The relay, the
// agent and `burrow connect` each run one.
boost::asio::awaitable<void> trim_heap_periodically(const std::atomic<bool>& stopping);

}  // namespace burrow
