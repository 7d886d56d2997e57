// Stream pump: the socket's bytes go straight into the link's write buffer, and the peer's bytes
// go straight to the socket when it takes them, so a stream buffers only what a slow socket
// leaves behind, never more than its credit.
#include "link/stream.hpp"

#include <cstring>
#include <utility>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "link/link.hpp"
#include "link/write_now.hpp"

namespace burrow::link {

namespace asio = boost::asio;
using asio::ip::tcp;

stream::stream(std::shared_ptr<link> owner, std::uint32_t id, std::uint32_t window)
    : link_(std::move(owner)),
      limiter_(link_->limiter()),
      id_(id),
      send_(window),
      receive_(window),
      inbound_event_(link_->executor()),
      credit_event_(link_->executor()),
      opened_at_(std::chrono::steady_clock::now()),
      last_activity_(opened_at_) {}

asio::any_io_executor stream::executor() const {
  return link_->executor();
}

asio::awaitable<void> stream::pump(tcp::socket& socket) {
  using namespace asio::experimental::awaitable_operators;
  boost::system::error_code ec;
  socket.non_blocking(true, ec);  // upstream's reads and write_now must never wait
  if (ec) reset(proto::stream_status::cancelled);
  socket_ = &socket;
  if (!reset_) co_await (upstream() && downstream());
  socket_ = nullptr;
  if (reset_) socket.set_option(asio::socket_base::linger(true, 0), ec);  // close with an RST
  link_->stream_finished(id_);
}

asio::awaitable<void> stream::upstream() {
  // The last read left the socket empty: wait until it is readable first (core/drained.hpp).
  bool drained = true;
  while (!reset_ && !outbound_fin_) {
    if (!send_ready()) {
      co_await wait_send_ready();
      continue;
    }
    if (drained) {
      auto [ec] = co_await socket_->async_wait(asio::ip::tcp::socket::wait_read,
                                               asio::as_tuple(asio::use_awaitable));
      if (reset_) break;
      if (ec) {
        reset(proto::stream_status::cancelled);
        break;
      }
    }
    std::size_t max =
        std::min<std::size_t>({send_.available(), link_->limits().max_frame, read_size_});
    boost::system::error_code rec;
    std::size_t n = link_->send_data_from(id_, *socket_, max, drained, rec, sealed_);
    if (rec == asio::error::would_block) continue;
    if (rec == asio::error::eof) {
      outbound_fin_ = true;
      link_->send_fin(id_, sealed_);
      break;
    }
    if (rec) {
      reset(proto::stream_status::cancelled);
      break;
    }
    send_.consume(static_cast<std::uint32_t>(n));
    bytes_out_ += n;
    if (n == max)
      read_size_ = link_->limits().max_frame;
    else if (n < small_read)
      read_size_ = small_read;
    touch();
    if (throttled()) co_await throttle(n);
  }
}

asio::awaitable<void> stream::throttle(std::size_t n) {
  auto wait = limiter_->charge(n);
  if (wait.count() <= 0) co_return;
  // In slices, so a reset stream stops waiting soon.
  asio::steady_timer timer(executor());
  auto until = std::chrono::steady_clock::now() + wait;
  while (!reset_ && std::chrono::steady_clock::now() < until) {
    timer.expires_at(
        std::min(until, std::chrono::steady_clock::now() + std::chrono::milliseconds(100)));
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    touch();  // waiting on the cap is not idleness
  }
}

bool stream::send_ready() const {
  return send_.available() > 0 && !link_->write_blocked();
}

asio::awaitable<void> stream::wait_send_ready() {
  if (send_.available() == 0)
    co_await credit_event_.wait();
  else
    co_await link_->wait_writable();
}

asio::awaitable<void> stream::downstream() {
  byte_buffer writing;
  while (!reset_) {
    if (!inbound_.empty()) {
      std::swap(inbound_, writing);  // on_data may append to inbound_ while this write runs
      auto all = asio::buffer(writing.data(), writing.size());
      boost::system::error_code ec;
      std::size_t n = write_now(*socket_, all, ec);  // pump() made the socket non-blocking
      if (!ec && n < all.size()) {
        auto [wec, wn] =
            co_await asio::async_write(*socket_, all + n, asio::as_tuple(asio::use_awaitable));
        ec = wec;
        n += wn;
      }
      if (reset_) break;
      if (ec) {
        reset(proto::stream_status::cancelled);
        break;
      }
      writing.clear();
      if (inbound_.empty()) std::swap(inbound_, writing);  // keep one buffer, not two
      // Credit goes back after the wait, so the cap pushes back on the sender.
      if (throttled()) co_await throttle(n);
      consumed(n);
      touch();
      continue;
    }
    if (inbound_fin_) {
      boost::system::error_code ec;
      socket_->shutdown(tcp::socket::shutdown_send, ec);
      break;
    }
    down_idle_ = true;
    co_await inbound_event_.wait();
    down_idle_ = false;
  }
}

asio::awaitable<std::size_t> stream::read_some(asio::mutable_buffer buffer,
                                               boost::system::error_code& ec) {
  for (;;) {
    if (reset_) {
      ec = asio::error::connection_reset;
      co_return 0;
    }
    if (!inbound_.empty()) {
      std::size_t n = std::min(buffer.size(), inbound_.size());
      std::memcpy(buffer.data(), inbound_.data(), n);
      inbound_.consume(n);
      if (throttled()) co_await throttle(n);
      consumed(n);
      touch();
      co_return n;
    }
    if (inbound_fin_) {
      ec = asio::error::eof;
      co_return 0;
    }
    co_await inbound_event_.wait();
  }
}

asio::awaitable<std::size_t> stream::write_some(asio::const_buffer buffer,
                                                boost::system::error_code& ec) {
  for (;;) {
    if (reset_) {
      ec = asio::error::connection_reset;
      co_return 0;
    }
    if (outbound_fin_) {
      ec = asio::error::shut_down;
      co_return 0;
    }
    if (!send_ready()) {
      co_await wait_send_ready();
      continue;
    }
    std::size_t n = std::min<std::size_t>(
        {buffer.size(), send_.available(), std::size_t{link_->limits().max_frame}});
    link_->send_data(id_, {static_cast<const std::uint8_t*>(buffer.data()), n}, sealed_);
    send_.consume(static_cast<std::uint32_t>(n));
    bytes_out_ += n;
    touch();
    if (throttled()) co_await throttle(n);
    co_return n;
  }
}

asio::awaitable<void> stream::wait_readable() {
  while (!reset_ && inbound_.empty() && !inbound_fin_) co_await inbound_event_.wait();
}

bool stream::can_send_now(std::size_t n) const {
  return !reset_ && !outbound_fin_ && !throttled() && send_.available() >= n &&
         n <= link_->limits().max_frame && !link_->write_blocked();
}

void stream::send_now(std::span<const std::uint8_t> bytes) {
  link_->send_data(id_, bytes, sealed_);
  send_.consume(static_cast<std::uint32_t>(bytes.size()));
  bytes_out_ += bytes.size();
  touch();
}

asio::awaitable<void> stream::write_all(std::span<const std::uint8_t> bytes,
                                        boost::system::error_code& ec) {
  while (!bytes.empty()) {
    auto n = co_await write_some(asio::buffer(bytes.data(), bytes.size()), ec);
    if (ec) co_return;
    bytes = bytes.subspan(n);
  }
}

asio::awaitable<proto::stream_status> stream::wait_open_result() {
  while (!open_confirmed_ && !reset_) co_await credit_event_.wait();
  co_return open_confirmed_ ? proto::stream_status::ok : reset_status_;
}

void stream::shutdown_send() {
  if (outbound_fin_ || reset_) return;
  outbound_fin_ = true;
  link_->send_fin(id_, sealed_);
}

void stream::finish() {
  if (!reset_ && !(outbound_fin_ && inbound_fin_ && inbound_.empty()))
    reset(proto::stream_status::cancelled);
  link_->stream_finished(id_);
}

void stream::consumed(std::size_t n) {
  if (auto grant = receive_.on_consumed(static_cast<std::uint32_t>(n)))
    link_->send_window(id_, grant, sealed_);
}

bool stream::on_data(std::span<const std::uint8_t> bytes, bool fin) {
  if (inbound_fin_ || !receive_.on_data(static_cast<std::uint32_t>(bytes.size()))) return false;
  if (reset_) return true;
  bytes_in_ += bytes.size();
  touch();
  if (!bytes.empty() && socket_ && down_idle_ && inbound_.empty() && !throttled()) {
    // The socket is idle: hand it the bytes now and skip the queue (unless a cap applies, which
    // downstream() waits out).
    boost::system::error_code ec;
    std::size_t n = socket_->write_some(asio::buffer(bytes.data(), bytes.size()), ec);
    if (ec) n = 0;  // the downstream write will meet the error and reset
    if (n) consumed(n);
    bytes = bytes.subspan(n);
  } else if (!bytes.empty() && joined_ && inbound_.empty() && !cap_waiting_ && !throttled() &&
             joined_->can_send_now(bytes.size())) {
    // Joined: nothing of ours is queued, so straight on to the other stream.
    joined_->send_now(bytes);
    consumed(bytes.size());
    bytes = {};
  } else if (!bytes.empty() && cross_ && inbound_.empty() && !cross_->in_flight &&
             !cross_->fin_passed && !cap_waiting_) {
    // Joined across threads, nothing of ours queued or on its way: the bytes go as a chunk.
    cross_post({bytes.begin(), bytes.end()});
    bytes = {};
  }
  if (!bytes.empty()) {
    // A queue's first bytes get a buffer of their size: a stream that queues once (a bridged
    // stream's first flight) holds hundreds of bytes, not 4 KiB, while they wait.
    inbound_.reserve_first(bytes.size());
    inbound_.append(bytes.data(), bytes.size());
  }
  if (fin) inbound_fin_ = true;
  if (joined_) {
    // Only what waits (a queue, a half-close) needs more. That may end the join and free this
    // stream: nothing of it is touched after.
    if (!inbound_.empty() || fin) pass_joined();
    return true;
  }
  if (cross_) {  // as above: cross_pass may end the join and free this stream
    if (!inbound_.empty() || fin) cross_pass();
    return true;
  }
  if (!inbound_.empty() || fin) inbound_event_.notify();
  return true;
}

void stream::join(const std::shared_ptr<stream>& a, const std::shared_ptr<stream>& b,
                  std::function<void()> done) {
  if (a->executor() != b->executor()) {
    join_across(a, b, std::move(done));
    return;
  }
  a->joined_ = b;
  b->joined_ = a;
  a->join_done_ = std::move(done);
  // What either holds already (a first flight that waited for the agent's answer) goes now.
  a->pass_joined();
  if (b->joined_) b->pass_joined();
}

// Nothing below calls back into either stream, and only end_join ends the join (and may free
// this stream): it is always the last thing done here.
void stream::pass_joined() {
  for (;;) {
    stream* peer = joined_.get();
    if (!peer) return;
    if (reset_ || peer->reset_) {
      end_join();
      return;
    }
    if (cap_waiting_) return;  // the cap's timer calls again
    if (inbound_.empty()) break;
    if (peer->send_.available() == 0) return;  // the peer's on_window calls again
    if (peer->link_->write_blocked()) {
      if (!waiting_room_) {
        waiting_room_ = true;
        peer->link_->when_writable(weak_from_this());
      }
      return;
    }
    std::size_t n = std::min<std::size_t>(
        {inbound_.size(), peer->send_.available(), std::size_t{peer->link_->limits().max_frame}});
    peer->send_now({inbound_.data(), n});
    inbound_.consume(n);
    touch();
    if (throttled() || peer->throttled()) {  // both caps apply, as a read and a write would
      auto wait = std::chrono::nanoseconds::zero();
      if (throttled()) wait += limiter_->charge(n);
      if (peer->throttled()) wait += peer->limiter_->charge(n);
      if (wait.count() > 0) {
        wait_cap(wait, n);
        return;
      }
    }
    consumed(n);
  }
  give_back_small_queue();
  if (!inbound_fin_) return;
  stream* peer = joined_.get();
  peer->shutdown_send();  // after the bytes; once only
  // Both ways through: the peer's half-close reached this stream's far end too.
  if (outbound_fin_ && peer->inbound_fin_ && peer->inbound_.empty()) end_join();
}

void stream::wait_cap(std::chrono::nanoseconds wait, std::size_t owed) {
  if (!cap_timer_) cap_timer_ = std::make_unique<asio::steady_timer>(executor());
  cap_waiting_ = true;
  cap_owed_ = owed;
  cap_until_ = std::chrono::steady_clock::now() +
               std::chrono::duration_cast<std::chrono::steady_clock::duration>(wait);
  arm_cap_timer();
}

void stream::arm_cap_timer() {
  cap_timer_->expires_at(
      std::min(cap_until_, std::chrono::steady_clock::now() + std::chrono::milliseconds(100)));
  cap_timer_->async_wait([weak = weak_from_this()](const boost::system::error_code&) {
    if (auto s = weak.lock()) s->on_cap_timer();
  });
}

void stream::on_cap_timer() {
  if (!cap_waiting_) return;
  touch();  // waiting on the cap is not idleness
  const bool in_join = joined_ || cross_;
  if (!reset_ && in_join && std::chrono::steady_clock::now() < cap_until_) {
    arm_cap_timer();
    return;
  }
  cap_waiting_ = false;
  if (reset_ || !in_join) return;
  if (auto owed = std::exchange(cap_owed_, 0)) consumed(owed);
  if (joined_)
    pass_joined();
  else
    cross_pass();
}

void stream::end_join() {
  auto self = shared_from_this();
  auto peer = std::move(joined_);
  joined_ = nullptr;
  if (!peer) return;
  peer->joined_ = nullptr;
  for (auto* s : {this, peer.get()}) {
    s->cap_waiting_ = false;
    if (s->cap_timer_) s->cap_timer_->cancel();
  }
  auto done = std::exchange(join_done_, nullptr);
  auto peer_done = std::exchange(peer->join_done_, nullptr);
  if (reset_ || peer->reset_) {
    reset(proto::stream_status::cancelled);
    peer->reset(proto::stream_status::cancelled);
  }
  finish();
  peer->finish();
  if (done) done();
  if (peer_done) peer_done();
}

void stream::on_link_writable() {
  waiting_room_ = false;
  if (joined_)
    pass_joined();  // this stream's bytes wait for room on the joined stream's link
  else if (cross_)
    cross_send();  // the other stream's chunk waits for room on this stream's link
}

void stream::give_back_small_queue() {
  if (inbound_.empty() && inbound_.capacity() <= small_queue) inbound_.release();
}

void stream::notice_quiet(std::chrono::steady_clock::time_point now) {
  if (quiet_told_ || now - last_activity_ < quiet_after) return;
  quiet_told_ = true;
  if (inbound_.empty()) inbound_.release();  // a queue that bulk grew, say
  if (quiet_hook_) quiet_hook_();
}

bool stream::on_window(std::uint32_t increment) {
  if (!send_.grant(increment)) return false;
  if (cross_) {
    cross_send();  // the other stream's chunk, if one waits for this credit
    return true;
  }
  if (!joined_) {
    credit_event_.notify();
    return true;
  }
  // Joined, nothing waits on the event: the peer's queue comes on within the new credit. That
  // may end the join and free this stream: nothing of it is touched after.
  if (!joined_->inbound_.empty()) joined_->pass_joined();
  return true;
}

void stream::on_open_result(proto::stream_status status, std::string_view reason) {
  if (status == proto::stream_status::ok) {
    open_confirmed_ = true;
    credit_event_.notify();
    return;
  }
  refusal_reason_.assign(reason.substr(0, 200));
  on_reset(status);
}

void stream::on_reset(proto::stream_status status) {
  if (reset_) return;
  reset_ = true;
  reset_status_ = status;
  inbound_.release();
  inbound_event_.notify();
  credit_event_.notify();
  if (socket_) {
    boost::system::error_code ec;
    socket_->cancel(ec);
  }
  if (joined_) {
    end_join();
  } else if (cross_) {
    cross_reset_peer();
    cross_end();
  }
}

void stream::reset(proto::stream_status status) {
  if (reset_) return;
  link_->send_reset(id_, status);
  on_reset(status);
}

}  // namespace burrow::link
