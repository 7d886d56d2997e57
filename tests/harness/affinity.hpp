// Narrowing a thread to one CPU, as taskset does to a process: a child started from that thread
// inherits the mask, and usable_cores() called on it sees one CPU.
#pragma once

#include <sched.h>

namespace burrow::test {

// Narrows the calling thread to the first CPU it may use, for the object's lifetime; the old
// mask comes back on destruction. narrowed() is false if the mask could not be changed.
class one_cpu_scope {
 public:
  one_cpu_scope() {
    CPU_ZERO(&saved_);
    if (sched_getaffinity(0, sizeof saved_, &saved_) != 0) return;
    int first = 0;
    while (!CPU_ISSET(first, &saved_)) ++first;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    narrowed_ = sched_setaffinity(0, sizeof one, &one) == 0;
  }
  ~one_cpu_scope() {
    if (narrowed_) sched_setaffinity(0, sizeof saved_, &saved_);
  }
  one_cpu_scope(const one_cpu_scope&) = delete;
  one_cpu_scope& operator=(const one_cpu_scope&) = delete;
  bool narrowed() const { return narrowed_; }

 private:
  cpu_set_t saved_;
  bool narrowed_ = false;
};

}  // namespace burrow::test
