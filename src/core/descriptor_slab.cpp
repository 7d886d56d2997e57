// Slabs for asio's per-socket state; see descriptor_slab.hpp.
#include "core/descriptor_slab.hpp"

#include <new>

namespace burrow {

namespace {

constexpr std::size_t slot_alignment = __STDCPP_DEFAULT_NEW_ALIGNMENT__;

std::size_t rounded_slot(std::size_t size) {
  const std::size_t at_least = size < sizeof(void*) ? sizeof(void*) : size;
  return (at_least + slot_alignment - 1) / slot_alignment * slot_alignment;
}

}  // namespace

slot_slab::slot_slab(std::size_t slot_size, std::size_t slots_per_chunk)
    : slot_size_(rounded_slot(slot_size)),
      slots_per_chunk_(slots_per_chunk == 0 ? 1 : slots_per_chunk) {}

slot_slab::~slot_slab() {
  for (std::byte* chunk : chunks_) ::operator delete(chunk);
}

void* slot_slab::allocate() {
  std::lock_guard lock(mutex_);
  void* slot = free_;
  if (slot) {
    free_ = *static_cast<void**>(slot);
  } else {
    if (chunks_.empty() || carved_in_last_ == slots_per_chunk_) {
      auto* chunk = static_cast<std::byte*>(::operator new(slot_size_* slots_per_chunk_));
      try {
        chunks_.push_back(chunk);
      } catch (...) {
        ::operator delete(chunk);
        throw;
      }
      carved_in_last_ = 0;
    }
    slot = chunks_.back() + carved_in_last_++ * slot_size_;
  }
  ++live_;
  return slot;
}

void slot_slab::deallocate(void* slot) noexcept {
  if (!slot) return;
  std::lock_guard lock(mutex_);
  *static_cast<void**>(slot) = free_;
  free_ = slot;
  if (--live_ == 0) release_chunks();
}

void slot_slab::release_chunks() noexcept {
  for (std::byte* chunk : chunks_) ::operator delete(chunk);
  chunks_.clear();
  chunks_.shrink_to_fit();
  carved_in_last_ = 0;
  free_ = nullptr;
}

slot_slab::usage slot_slab::now() const {
  std::lock_guard lock(mutex_);
  return {live_, chunks_.size()};
}

slot_slab& descriptor_slab() {
#if BURROW_DESCRIPTOR_SLAB
  constexpr std::size_t slot = sizeof(boost::asio::detail::epoll_reactor::descriptor_state);
#else
  constexpr std::size_t slot = 64;
#endif
  // About 16 KiB a chunk: four pages hold what a hundred pages held when each state had its own.
  static slot_slab* const slab = new slot_slab(slot, 16384 / slot);
  return *slab;
}

}  // namespace burrow

#if BURROW_DESCRIPTOR_SLAB
namespace boost::asio::detail {

static_assert(alignof(epoll_reactor::descriptor_state) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);

template <>
epoll_reactor::descriptor_state* object_pool_access::create<epoll_reactor::descriptor_state, bool>(
    bool locking) {
  void* slot = burrow::descriptor_slab().allocate();
  try {
    return new (slot) epoll_reactor::descriptor_state(locking);
  } catch (...) {
    burrow::descriptor_slab().deallocate(slot);
    throw;
  }
}

template <>
void object_pool_access::destroy<epoll_reactor::descriptor_state>(
    epoll_reactor::descriptor_state* state) {
  state->~descriptor_state();
  burrow::descriptor_slab().deallocate(state);
}

}  // namespace boost::asio::detail
#endif
