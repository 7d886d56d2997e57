// A growable byte buffer that does not zero what it grows into and can drop bytes from its front
// cheaply; the link's read, write and per-stream queues are built on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>

namespace burrow::link {

class byte_buffer {
 public:
  std::size_t size() const { return end_ - begin_; }
  bool empty() const { return begin_ == end_; }
  std::size_t capacity() const { return capacity_; }
  std::uint8_t* data() { return data_.get() + begin_; }
  const std::uint8_t* data() const { return data_.get() + begin_; }
  std::span<const std::uint8_t> bytes() const { return {data(), size()}; }

  // Makes room for n more bytes at the end and returns where they go; commit() adds them.
  std::uint8_t* prepare(std::size_t n) {
    if (capacity_ - end_ < n) grow(n);
    return data_.get() + end_;
  }
  void commit(std::size_t n) { end_ += n; }
  // An empty buffer with no memory yet gets exactly `n` bytes of room (not the usual 4 KiB), for
  // queues that mostly hold one small message and then nothing.
  void reserve_first(std::size_t n) {
    if (capacity_ == 0 && n > 0) {
      data_ = std::make_unique_for_overwrite<std::uint8_t[]>(n);
      capacity_ = n;
      begin_ = end_ = 0;
    }
  }
  void append(const void* p, std::size_t n) {
    std::memcpy(prepare(n), p, n);
    commit(n);
  }
  void consume(std::size_t n) {
    begin_ += n;
    if (begin_ == end_) begin_ = end_ = 0;
  }
  void clear() { begin_ = end_ = 0; }
  // Gives the memory back, for buffers that may sit idle for a long time.
  void release() {
    data_.reset();
    begin_ = end_ = capacity_ = 0;
  }
  // Gives the memory back if the buffer is empty and has grown past `keep` bytes.
  void trim(std::size_t keep) {
    if (empty() && capacity_ > keep) release();
  }

 private:
  void grow(std::size_t n) {
    std::size_t used = size();
    if (begin_ > 0 && capacity_ - used >= n && begin_ >= used) {
      std::memmove(data_.get(), data(), used);  // reuse the space already consumed
    } else {
      std::size_t want = capacity_ ? capacity_ : 4096;
      while (want < used + n) want *= 2;
      auto bigger = std::make_unique_for_overwrite<std::uint8_t[]>(want);
      if (used) std::memcpy(bigger.get(), data(), used);
      data_ = std::move(bigger);
      capacity_ = want;
    }
    begin_ = 0;
    end_ = used;
  }

  std::unique_ptr<std::uint8_t[]> data_;
  std::size_t begin_ = 0, end_ = 0, capacity_ = 0;
};

}  // namespace burrow::link
