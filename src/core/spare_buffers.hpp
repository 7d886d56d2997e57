// Small read buffers that a thread's readers give back while they wait, for the next reader that
// has bytes to read: a connection that waits holds none, and taking one costs no allocation.
// Used by the end-to-end splice and the HTTP proxy, whose visitors spend most of their life
// waiting.
#pragma once

#include <cstddef>
#include <memory>
#include <new>

namespace burrow {

inline constexpr std::size_t spare_buffer_size = 4 * 1024;

// A buffer of spare_buffer_size bytes: one this thread gave back, or a new one.
void* take_spare_buffer();
// Takes back a buffer from take_spare_buffer (made on any thread): kept for this thread's next
// take, up to 64 of them (256 KiB a thread), or freed. Safe from destructors, also while the
// thread exits.
void give_spare_buffer(void* buffer) noexcept;

// Serves blocks of exactly spare_buffer_size bytes from the spares and any other size from the
// heap, for containers that give their storage back while they wait (a flat_buffer's
// shrink_to_fit, say).
template <class T>
struct spare_allocator {
  using value_type = T;
  spare_allocator() = default;
  template <class U>
  spare_allocator(const spare_allocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    if (n * sizeof(T) == spare_buffer_size) return static_cast<T*>(take_spare_buffer());
    return std::allocator<T>{}.allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (n * sizeof(T) == spare_buffer_size) {
      give_spare_buffer(p);
      return;
    }
    std::allocator<T>{}.deallocate(p, n);
  }
  template <class U>
  bool operator==(const spare_allocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace burrow
