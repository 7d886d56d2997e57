// Giving freed heap memory back to the system.
#include "core/heap.hpp"

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

}  // namespace burrow
