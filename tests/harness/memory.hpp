// What the test process holds in memory, for tests of what the heap gives back.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <fstream>

namespace burrow::test {

// Whether a sanitizer's allocator replaces malloc's heaps in this build (so their pages and
// malloc_trim() say nothing about glibc's).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool sanitizer_allocator = true;
#else
inline constexpr bool sanitizer_allocator = false;
#endif

// This process's resident memory (/proc/self/statm), in bytes.
inline std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace burrow::test
