// One direction's read buffer for a byte pump, there only while the direction has bytes to move:
// a connection that waits holds none. Reads start at a spare's size (requests and responses fit)
// and grow to 16 KiB for the rest of the connection once a read fills the buffer (bulk). The
// end-to-end splice and the socket pump of `burrow forward` use it.
#pragma once

#include <atomic>
#include <boost/asio/buffer.hpp>
#include <cstddef>
#include <cstdint>

#include "core/spare_buffers.hpp"

namespace burrow {

class read_buffer {
 public:
  static constexpr std::size_t small_size = spare_buffer_size;
  static constexpr std::size_t large_size = 16 * 1024;

  // `held` counts the bytes the buffers hold now, `chosen` the sizes they read with: the caller's
  // counters, for its memory accounting.
  read_buffer(std::atomic<std::size_t>& held, std::atomic<std::size_t>& chosen)
      : held_(held), chosen_(chosen) {
    chosen_.fetch_add(size_, std::memory_order_relaxed);
  }
  ~read_buffer() {
    give_back();
    chosen_.fetch_sub(size_, std::memory_order_relaxed);
  }
  read_buffer(const read_buffer&) = delete;
  read_buffer& operator=(const read_buffer&) = delete;

  // The buffer for a read, taken now if the direction has none: a small one from this thread's
  // spares.
  boost::asio::mutable_buffer whole() {
    if (!data_) {
      data_ = spare_allocator<std::uint8_t>{}.allocate(size_);
      held_.fetch_add(size_, std::memory_order_relaxed);
    }
    return boost::asio::buffer(data_, size_);
  }
  std::uint8_t* data() { return data_; }
  // After a read of `n` bytes has been passed on: a read that filled the buffer grows it.
  void after_read(std::size_t n) {
    if (n < size_ || size_ >= large_size) return;
    give_back();
    chosen_.fetch_add(large_size - size_, std::memory_order_relaxed);
    size_ = large_size;
  }
  // Before the direction waits for bytes.
  void give_back() {
    if (!data_) return;
    held_.fetch_sub(size_, std::memory_order_relaxed);
    spare_allocator<std::uint8_t>{}.deallocate(data_, size_);
    data_ = nullptr;
  }

 private:
  std::atomic<std::size_t>& held_;
  std::atomic<std::size_t>& chosen_;
  std::uint8_t* data_ = nullptr;
  std::size_t size_ = small_size;
};

}  // namespace burrow
