// Where asio keeps what it knows about each socket.
//
// asio 1.81's epoll reactor gives every registered socket a descriptor_state (168 bytes) from an
// object pool that never frees: a closed socket's state waits on the pool's free list for the
// next socket. After a burst of a thousand connections, a thousand or more of them stay, each
// allocated among that connection's buffers and coroutine frames, which have all been freed.
// Each keeps its page of the heap resident, and neither free() nor malloc_trim() can return a
// page with a live block on it: after 5 s of 1,000 new connections each
// (bench/burst-memory.sh), the relay's heap held 1.6 MiB in use and about 8 MiB resident, 1,478
// descriptor states among them (heaptrack).
//
// descriptor_slab gives the reactor's pool its objects from slabs of their own, so they sit side
// by side instead of one to a page. asio's allocation is reached through an explicit
// specialization of its object_pool_access for descriptor_state, declared below and seen by
// asio_impl.cpp, where asio is compiled; only with the Boost this was written against (1.81,
// Debian 12's) and its epoll reactor, as core/drained.hpp. Built against anything else, asio
// allocates as it does itself.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

#include <boost/asio/detail/config.hpp>  // defines BOOST_ASIO_HAS_EPOLL, checked below
#include <boost/version.hpp>

// Only where asio is compiled once (BOOST_ASIO_SEPARATE_COMPILATION, as CMakeLists.txt sets it):
// compiled into every file, its reactor could be built where the specialization is not seen.
#if BOOST_VERSION == 108100 && defined(BOOST_ASIO_HAS_EPOLL) &&                           \
    !defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT) && !defined(BOOST_ASIO_DISABLE_EPOLL) && \
    defined(BOOST_ASIO_SEPARATE_COMPILATION)
#define BURROW_DESCRIPTOR_SLAB 1
#include <boost/asio/detail/epoll_reactor.hpp>
#include <boost/asio/detail/object_pool.hpp>
#else
#define BURROW_DESCRIPTOR_SLAB 0
#endif

namespace burrow {

// Fixed-size slots carved from chunks allocated whole. A freed slot is reused before a new one
// is carved; the chunks go back to the heap together when the last slot is freed. Thread-safe.
class slot_slab {
 public:
  struct usage {
    std::size_t live = 0;    // slots handed out and not freed
    std::size_t chunks = 0;  // chunks held
  };

  // `slot_size` is rounded up to a multiple of the default new alignment, which every slot has.
  slot_slab(std::size_t slot_size, std::size_t slots_per_chunk);
  ~slot_slab();
  slot_slab(const slot_slab&) = delete;
  slot_slab& operator=(const slot_slab&) = delete;

  void* allocate();
  void deallocate(void* slot) noexcept;
  usage now() const;

 private:
  void release_chunks() noexcept;  // with mutex_ held and nothing live

  const std::size_t slot_size_;
  const std::size_t slots_per_chunk_;
  mutable std::mutex mutex_;
  std::vector<std::byte*> chunks_;
  std::size_t carved_in_last_ = 0;  // slots carved from chunks_.back()
  void* free_ = nullptr;            // freed slots, linked through their first bytes
  std::size_t live_ = 0;
};

// Whether asio's descriptor states come from descriptor_slab() in this build.
constexpr bool descriptor_slab_supported = BURROW_DESCRIPTOR_SLAB == 1;

// The slab every io_context's reactor takes its descriptor states from (never destroyed, so a
// reactor destroyed late at exit still finds it).
slot_slab& descriptor_slab();

}  // namespace burrow

#if BURROW_DESCRIPTOR_SLAB
namespace boost::asio::detail {

template <>
epoll_reactor::descriptor_state* object_pool_access::create<epoll_reactor::descriptor_state, bool>(
    bool locking);

template <>
void object_pool_access::destroy<epoll_reactor::descriptor_state>(
    epoll_reactor::descriptor_state* state);

}  // namespace boost::asio::detail
#endif
