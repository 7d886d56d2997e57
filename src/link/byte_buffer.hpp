// A growable byte buffer that does not zero what it grows into and can drop bytes from its front
// cheaply; the link's read, write and per-stream queues are built on it. Its smallest size is a
// spare buffer (core/spare_buffers.hpp), taken from and given back to the thread's spares, so a
// buffer that is released while it waits and taken again for the next bytes costs no allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <utility>

#include "core/spare_buffers.hpp"

namespace burrow::link {

class byte_buffer {
 public:
  byte_buffer() = default;
  byte_buffer(byte_buffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        begin_(std::exchange(other.begin_, 0)),
        end_(std::exchange(other.end_, 0)),
        capacity_(std::exchange(other.capacity_, 0)) {}
  byte_buffer& operator=(byte_buffer&& other) noexcept {
    if (this != &other) {
      free_storage(data_, capacity_);
      data_ = std::exchange(other.data_, nullptr);
      begin_ = std::exchange(other.begin_, 0);
      end_ = std::exchange(other.end_, 0);
      capacity_ = std::exchange(other.capacity_, 0);
    }
    return *this;
  }
  ~byte_buffer() { free_storage(data_, capacity_); }

  std::size_t size() const { return end_ - begin_; }
  bool empty() const { return begin_ == end_; }
  std::size_t capacity() const { return capacity_; }
  std::uint8_t* data() { return data_ + begin_; }
  const std::uint8_t* data() const { return data_ + begin_; }
  std::span<const std::uint8_t> bytes() const { return {data(), size()}; }

  // Makes room for n more bytes at the end and returns where they go; commit() adds them.
  std::uint8_t* prepare(std::size_t n) {
    if (capacity_ - end_ < n) grow(n);
    return data_ + end_;
  }
  void commit(std::size_t n) { end_ += n; }
  // An empty buffer with no memory yet gets exactly `n` bytes of room (not the usual 4 KiB), for
  // queues that mostly hold one small message and then nothing.
  void reserve_first(std::size_t n) {
    if (capacity_ == 0 && n > 0) {
      data_ = allocate(n);
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
    free_storage(std::exchange(data_, nullptr), capacity_);
    begin_ = end_ = capacity_ = 0;
  }
  // Gives the memory back if the buffer is empty and has grown past `keep` bytes.
  void trim(std::size_t keep) {
    if (empty() && capacity_ > keep) release();
  }

 private:
  // Uninitialised storage: a spare for spare_buffer_size bytes, the heap for any other size.
  static std::uint8_t* allocate(std::size_t n) {
    return spare_allocator<std::uint8_t>{}.allocate(n);
  }
  static void free_storage(std::uint8_t* p, std::size_t capacity) noexcept {
    if (p) spare_allocator<std::uint8_t>{}.deallocate(p, capacity);
  }

  void grow(std::size_t n) {
    std::size_t used = size();
    if (begin_ > 0 && capacity_ - used >= n && begin_ >= used) {
      std::memmove(data_, data(), used);  // reuse the space already consumed
    } else {
      std::size_t want = capacity_ ? capacity_ : spare_buffer_size;
      while (want < used + n) want *= 2;
      std::uint8_t* bigger = allocate(want);
      if (used) std::memcpy(bigger, data(), used);
      free_storage(std::exchange(data_, bigger), capacity_);
      capacity_ = want;
    }
    begin_ = 0;
    end_ = used;
  }

  std::uint8_t* data_ = nullptr;
  std::size_t begin_ = 0, end_ = 0, capacity_ = 0;
};

}  // namespace burrow::link
