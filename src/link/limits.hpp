// Limits and timings of one link; the relay announces them in its welcome message.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace burrow::link {

struct link_limits {
  std::uint32_t max_frame = 64 * 1024;        // payload bytes per frame
  std::uint32_t initial_window = 256 * 1024;  // per-stream credit, each direction
  std::uint32_t max_streams = 65536;          // open streams per link
  std::chrono::milliseconds ping_interval{5000};
  std::chrono::milliseconds ping_timeout{5000};      // silence after a ping that closes the link
  std::chrono::milliseconds open_timeout{10000};     // open frame to open result
  std::chrono::milliseconds stream_idle_timeout{0};  // 0: streams may idle forever
  std::size_t write_high_water = 2 * 1024 * 1024;    // queued bytes that pause readers
  std::size_t write_low_water = 512 * 1024;          // and let them go again
  // Queued bytes at which the peer is taken to be not reading at all (say, flooding pings
  // without reading the pongs): the link is closed rather than left to grow.
  std::size_t write_hard_limit = 32 * 1024 * 1024;
};

}  // namespace burrow::link
