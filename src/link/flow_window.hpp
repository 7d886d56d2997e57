// Per-stream credit accounting, kept apart from I/O so it can be tested alone. The sender spends
// credit on data bytes; the receiver grants it back once the bytes have left its buffer.
#pragma once

#include <cstdint>

namespace burrow::link {

inline constexpr std::uint32_t max_window = 0x7fffffff;

class send_window {
 public:
  explicit send_window(std::uint32_t initial) : credit_(initial) {}
  std::uint32_t available() const { return credit_; }
  void consume(std::uint32_t n) { credit_ -= n; }
  // False when the peer grants more than a window can hold: a protocol error.
  bool grant(std::uint32_t n) {
    if (n == 0 || std::uint64_t{credit_} + n > max_window) return false;
    credit_ += n;
    return true;
  }

 private:
  std::uint32_t credit_;
};

class receive_window {
 public:
  explicit receive_window(std::uint32_t size) : size_(size), outstanding_(size) {}
  // The peer sent n bytes; false when it sent more than it had credit for.
  bool on_data(std::uint32_t n) {
    if (n > outstanding_) return false;
    outstanding_ -= n;
    return true;
  }
  // n bytes left our buffer. Returns the credit to grant now: batched until a quarter of the
  // window is free, so small writes don't each cost a window frame.
  std::uint32_t on_consumed(std::uint32_t n) {
    pending_ += n;
    if (pending_ < size_ / 4) return 0;
    std::uint32_t grant = pending_;
    outstanding_ += grant;
    pending_ = 0;
    return grant;
  }
  std::uint32_t outstanding() const { return outstanding_; }
  std::uint32_t size() const { return size_; }

 private:
  std::uint32_t size_;
  std::uint32_t outstanding_;  // bytes the peer may still send
  std::uint32_t pending_ = 0;  // consumed but not yet granted back
};

}  // namespace burrow::link
