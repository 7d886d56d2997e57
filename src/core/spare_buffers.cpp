// The spares: a list per thread, so that taking and giving need no lock.
#include "core/spare_buffers.hpp"

#include <new>
#include <vector>

namespace burrow {

namespace {

constexpr std::size_t max_kept = 64;

// Trivially destructible, so it can be read after the list below is gone (a connection's frame
// destroyed during the thread's exit, after the list).
thread_local bool list_gone = false;

struct spare_list {
  std::vector<void*> free;
  ~spare_list() {
    for (void* b : free) ::operator delete(b);
    list_gone = true;
  }
};

spare_list& spares() {
  static thread_local spare_list kept;
  return kept;
}

}  // namespace

void* take_spare_buffer() {
  if (!list_gone) {
    auto& list = spares().free;
    if (!list.empty()) {
      void* b = list.back();
      list.pop_back();
      return b;
    }
  }
  return ::operator new(spare_buffer_size);
}

void give_spare_buffer(void* buffer) noexcept {
  if (!buffer) return;
  if (!list_gone) {
    auto& list = spares().free;
    try {
      list.reserve(max_kept);          // once a thread; the push below then never allocates
    } catch (const std::bad_alloc&) {  // no room for the list: the buffer is freed instead
    }
    if (list.size() < list.capacity()) {
      list.push_back(buffer);
      return;
    }
  }
  ::operator delete(buffer);
}

}  // namespace burrow
